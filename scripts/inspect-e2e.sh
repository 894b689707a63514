#!/usr/bin/env bash
# PEAR through Inspect end to end (docs/inspect.md): a local llama.cpp server with the shipped
# model, `inspect eval pear/gsm8k` against it, the log imported as a run and validated.
# Usage: scripts/inspect-e2e.sh OUT_RUN [N_QUESTIONS]   (needs make setup-inspect)
set -euo pipefail
out=${1:?usage: scripts/inspect-e2e.sh OUT_RUN [N_QUESTIONS]}
n=${2:-3}
py=.venv/bin/python
logs=$(realpath -m "$out-logs")  # absolute: inspect runs from another directory
rm -rf "$out" "$logs"
mkdir -p "$(dirname "$out")"  # OUT_RUN's folder may be new: the server's log goes beside it first
gguf=$($py -c "from pear.backends.llamacpp import default_model_path; print(default_model_path())")
port=$($py -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
$py -m llama_cpp.server --model "$gguf" --host 127.0.0.1 --port "$port" --n_ctx 2048 \
  > "$out-server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 120); do
  $py -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/v1/models', timeout=2)" \
    2>/dev/null && break
  kill -0 $server 2>/dev/null || { cat "$out-server.log"; exit 1; }
  sleep 1
done
export LOCAL_BASE_URL="http://127.0.0.1:$port/v1" LOCAL_API_KEY=none
t0=$(date +%s)
# from outside the checkout: Inspect resolves pear/gsm8k through the installed entry point
(cd "$(mktemp -d)" && "$OLDPWD/.venv/bin/inspect" eval pear/gsm8k --model openai-api/local/smollm2 \
  -T preset=smoke -T n_questions="$n" -T seed=0 -T method=pear --log-dir "$logs" \
  --display plain)
echo "[inspect-e2e] inspect eval: $(( $(date +%s) - t0 )) s"
kill $server; trap - EXIT
.venv/bin/pear import inspect "$logs"/*.eval --out "$out"
.venv/bin/pear validate "$out"
