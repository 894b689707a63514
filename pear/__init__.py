"""PEAR: Permutation-Equivariant Adaptive Routing multi-agent debate.

The public API is small; heavy runtimes (vllm, llama_cpp) are imported only inside their
backend modules when used.
"""
from pear.config import METHODS, DebateConfig, Method, RouterConfig, method

__version__ = "0.1.0"
__all__ = ["DebateConfig", "RouterConfig", "Method", "METHODS", "method", "__version__"]
