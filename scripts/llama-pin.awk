# The lock's llama-cpp-python entry: its pin line and the hash lines it continues onto, or,
# with -v rest=1, every other line of the lock (what installs beside it).  Used by the Makefile
# (the rest) and scripts/llama-wheel.sh (the entry), so the two read the lock one way.
/^llama-cpp-python==/ { entry = 1 }
entry { if (!rest) print; if ($0 !~ /\\$/) entry = 0; next }
rest { print }
