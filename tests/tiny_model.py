"""Build a tiny but real model2vec model on disk, so tests load it the way a real one loads.

The model is made with model2vec's own ``StaticModel.save_pretrained``, so the folder holds the
same files (``model.safetensors``, ``tokenizer.json``, ``config.json``) as a downloaded model
and ``StaticModel.from_pretrained(folder)`` reads it without any network.
"""

from __future__ import annotations

from pathlib import Path

SPECIAL_TOKENS = ["[PAD]", "[UNK]"]

# Common English words, enough for sentences in tests to share and differ in vocabulary.
_WORDS_TEXT = """
the be to of and a in that have i it for not on with he as you do at this but his by from
they we say her she or an will my one all would there their what so up out if about who get
which go me when make can like time no just him know take people into year your good some
could them see other than then now look only come its over think also back after use two how
our work first well way even new want because any these give day most us is are was were been
has had did said dog cat bird fish horse tree mountain mountains river lake sea sky sun moon
rain snow wind hiking walk run swim climb trail forest city town house home car train bus road
money tax filing deadline quarterly report invoice budget bank loan price cost pay salary
meeting email call phone note memory agent model vector search query answer question fact
book read write learn teach school friend family mother father child love loves went going
happy sad big small old young long short hot cold fast slow red blue green black white
"""
DEFAULT_WORDS = _WORDS_TEXT.split()


def build_tiny_model(path: Path, dim: int = 16, words: list[str] | None = None,
                     seed: int = 0) -> Path:
    """Write a WordLevel-tokenizer model2vec model with random vectors from ``seed`` into
    ``path`` (another seed: a model with the same words and other weights)."""
    import numpy as np
    from model2vec import StaticModel
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordLevel

    vocabulary = list(dict.fromkeys(SPECIAL_TOKENS + list(words or DEFAULT_WORDS)))
    tokenizer = Tokenizer(WordLevel({word: i for i, word in enumerate(vocabulary)},
                                    unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    vectors = np.random.default_rng(seed).standard_normal((len(vocabulary), dim)).astype(np.float32)
    model = StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True)
    path = Path(path)
    model.save_pretrained(path)
    return path
