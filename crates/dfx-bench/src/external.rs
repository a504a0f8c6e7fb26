//! External bench: `vllm bench serve --omni`, one fresh command per sweep step (BENCH.md, "External bench").
