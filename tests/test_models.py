"""The tiny model: deterministic from a seed, round-trips through disk, stops at the end of turn."""
from __future__ import annotations

import torch

from klear_lib.configs import get_config, recipe
from klear_lib.models import build_model, build_tokenizer, load, load_or_build, save
from klear_lib.seeding import np_rng, stable_seed, torch_generator

MSGS = [{"role": "user", "content": "Compute 2+3."},
        {"role": "assistant", "content": "<think>\n2+3=5\n</think>\n\\boxed{5}"}]


def test_stable_seed_is_stable_and_distinct():
    assert stable_seed(0, "data", 1) == stable_seed(0, "data", 1) == 840844336985588136
    assert stable_seed(0, "data", 1) != stable_seed(0, "data", 2) != stable_seed(1, "data", 1)
    assert np_rng(3, "x").integers(1 << 30) == np_rng(3, "x").integers(1 << 30)
    a, b = (torch.randn(4, generator=torch_generator(7, "init")) for _ in range(2))
    assert torch.equal(a, b)


def test_same_seed_same_weights_other_seed_other_weights():
    tok = build_tokenizer()
    cfg = get_config("model", "ci")
    a, b = build_model(cfg, tok), build_model(cfg, tok)
    c = build_model(get_config("model", "ci", init_seed=1), tok)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_tokenizer_chat_template_and_think_tags():
    tok = build_tokenizer()
    text = tok.apply_chat_template(MSGS, tokenize=False)
    assert text.endswith("<|im_start|>assistant\n<think>\n2+3=5\n</think>\n\\boxed{5}<|im_end|>\n")
    prompt = tok.apply_chat_template(MSGS[:1], add_generation_prompt=True, tokenize=False)
    assert prompt.endswith("<|im_start|>assistant\n")  # the model itself emits <think>
    ids = tok("<think>a</think>")["input_ids"]
    assert tok.convert_ids_to_tokens(ids) == ["<think>", "a", "</think>"]
    assert tok.decode(ids, skip_special_tokens=True) == "<think>a</think>"  # tags survive TRL's decode
    out = tok.apply_chat_template(MSGS, return_dict=True, return_assistant_tokens_mask=True)
    kept = [i for i, m in zip(out["input_ids"], out["assistant_masks"]) if m]
    assert tok.decode(kept) == MSGS[1]["content"] + "<|im_end|>"


def _overfit(model, tok, steps=60):
    ids = torch.tensor([tok.apply_chat_template(MSGS, tokenize=True, return_dict=True)["input_ids"]])
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    for _ in range(steps):
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad(); loss.backward(); opt.step()
    return float(loss.detach())


def test_round_trip_and_generation_stops_at_end_of_turn(tmp_path):
    tok = build_tokenizer()
    model = build_model(get_config("model", "ci"), tok)
    torch.manual_seed(0)
    assert _overfit(model, tok) < 0.2
    save(model, tok, tmp_path / "m")
    model2, tok2 = load(tmp_path / "m")
    sa, sb = model.state_dict(), model2.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    prompt = tok2.apply_chat_template(MSGS[:1], add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model2.generate(**prompt, max_new_tokens=80, do_sample=False)
    new = out[0, prompt["input_ids"].shape[1]:]
    assert new[-1].item() == tok2.eos_token_id and len(new) < 80
    assert tok2.decode(new, skip_special_tokens=True) == MSGS[1]["content"]


def test_load_or_build_caches_on_disk():
    first = load_or_build(recipe("ci"))
    assert load_or_build(recipe("ci")) == first
    model, tok = load(first)
    assert model.config.model_type == "qwen3" and model.config.eos_token_id == tok.eos_token_id
