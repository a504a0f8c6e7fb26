"""Writes a local word-level tokenizer folder for `vllm bench` on a machine without a model hub.

vllm bench loads a tokenizer even for the TTS backends (it counts prompt tokens); the peer
benchmark (`benches/vllm_peer.rs`) and the omni figures in BENCHMARKS.md use this one:
2003 tokens (`w0` … `w1999` and three specials), whitespace pre-tokenizer.

    python make_tokenizer.py DIR    # then DFX_TOKENIZER=DIR

Needs the `tokenizers` and `transformers` packages (both come with vllm).
"""

import sys
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: make_tokenizer.py DIR")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for i in range(2000):
        vocab[f"w{i}"] = i + 3
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    fast.save_pretrained(out)
    print(f"{out}: {len(vocab)} tokens")


if __name__ == "__main__":
    main()
