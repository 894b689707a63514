"""Commands that list what a run can use: ``pear models`` (the study's model registry) and
``pear methods`` (every registered method with its origin)."""
from __future__ import annotations

import argparse
from typing import Any

from pear.cli.options import add_plugin_argument

__all__ = ["add_models", "add_methods"]


def add_models(sub: Any) -> None:
    sub.add_parser("models", help="list the study's models and model groups",
                   description="The model registry: what `--model KEY` and `--model paper` "
                               "run, with the settings and the part of the grid each needs."
                   ).set_defaults(handler=_cmd_models)


def _cmd_models(_a: argparse.Namespace) -> int:
    from pear.catalog.models import GROUPS, MODELS
    print(f"{'key':<18}{'display name':<18}{'backend':<8}{'model id':<34}{'methods':>8}"
          f"{'questions':>10}  {'full sets':<19} settings")
    for m in MODELS:
        settings = []
        if m.chat_template_kwargs:
            settings.append(f"chat_template_kwargs={dict(m.chat_template_kwargs)}")
        if m.max_model_len:
            settings.append(f"max_model_len={m.max_model_len}")
        if m.api_key_env:
            settings.append(f"{m.base_url} (key in ${m.api_key_env})")
        print(f"{m.key:<18}{m.display_name:<18}{m.backend:<8}{m.model_id:<34}"
              f"{len(m.methods):>8}{m.n_questions:>10}  {','.join(m.full_datasets) or '-':<19} "
              f"{'; '.join(settings)}")
    print("\nmethods: 14 = every method (with the ablations), 8 = the main table's; "
          "questions per dataset")
    print("groups: " + "; ".join(f"{g} = {', '.join(keys)}" for g, keys in GROUPS.items()))
    print("run: pear run --preset paper --backend vllm --model paper --out data/runs/paper "
          "(one model after another, each resumable)")
    notes = [f"{m.key}: {m.notes}" for m in MODELS if m.notes]
    if notes:
        print("notes:\n  " + "\n  ".join(notes))
    return 0


def add_methods(sub: Any) -> None:
    m = sub.add_parser(
        "methods", help="list every method (the study's and plug-ins) with its origin",
        description="Every registered method: the study's, the bundled related work, entry "
                    "points of group 'pear.methods', and modules given by --plugin or "
                    "PEAR_PLUGINS.")
    add_plugin_argument(m)
    m.set_defaults(handler=_cmd_methods)


def _cmd_methods(_a: argparse.Namespace) -> int:
    # heavy: pandas, only for this command
    from pear.catalog.labels import method_label, method_order
    from pear.methods import names, spec
    print(f"{'method':<18}{'label':<26}{'origin':<14}{'kind':<8}{'module':<31}params")
    for name in method_order(names()):
        m = spec(name)
        where = (m.module or "pear.core.methods") + (f" {m.version}" if m.version else "")
        params = ", ".join(f"{k}={v}" for k, v in m.params) or "-"
        print(f"{name:<18}{method_label(name):<26}{m.origin:<14}{m.kind:<8}{where:<30} {params}")
        if m.description:
            print(f"{'':<18}{m.description}")
    return 0
