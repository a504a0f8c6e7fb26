//! Native streaming load generator for `openai-audio-speech` (BENCH.md).
