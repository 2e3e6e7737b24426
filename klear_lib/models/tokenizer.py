"""The tiny model's tokenizer, built offline: one token per printable ASCII character, a Qwen3-style chat.

Special tokens follow Qwen3: ``<|endoftext|>`` (padding), ``<|im_start|>``, ``<|im_end|>`` (end of turn = eos).
``<think>`` and ``</think>`` are ordinary added tokens, as in Qwen3's tokenizer: registering them as *special*
makes TRL decode completions without them, so every reward sees no think tags (docs/stack.md §7).
"""
from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

PAD, IM_START, IM_END, UNK = "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|unk|>"
THINK_TAGS = ["<think>", "</think>"]
ALPHABET = ["\n"] + [chr(c) for c in range(32, 127)]

# Qwen3-style ChatML; the assistant turn sits in {% generation %} so SFT can mask everything else. The
# generation prompt stops at "assistant\n": the model itself emits <think> (docs/paper.md §2.6).
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\n' }}{% generation %}{{- message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{{- '\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"
)


def build_tokenizer(vocab_size: int | None = None) -> PreTrainedTokenizerFast:
    """A character-level tokenizer with Qwen3's chat tokens; deterministic, no training data needed.

    ``vocab_size`` pads the vocabulary with filler tokens that no text produces, so that a model of a real
    vocabulary's shape (Qwen3-8B's 151,936) decodes every id it samples (scripts/gpu_check.py)."""
    tokens = [PAD, IM_START, IM_END, UNK] + ALPHABET
    tokens += [f"<|filler{i}|>" for i in range((vocab_size or 0) - len(tokens) - len(THINK_TAGS))]
    vocab = {tok: i for i, tok in enumerate(tokens)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token=IM_END, pad_token=PAD, unk_token=UNK,
                                  additional_special_tokens=[IM_START], padding_side="left")
    tok.add_tokens(THINK_TAGS, special_tokens=False)
    tok.chat_template = CHAT_TEMPLATE
    return tok
