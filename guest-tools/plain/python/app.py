"""A plain component in Python for the host's tests (issue 25): it exports
the interface `example:plain-python/text-tools` (wit/world.wit) and knows
nothing of the `mcp:tool` contract; the host makes a tool of each function.

Built with componentize-py (xtask does this into target/guests/plain-python.wasm):

    componentize-py -d wit -w plain-python componentize app -o plain-python.wasm
"""

import re

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.text_tools import Stats, Token, Token_Blank, Token_Number, Token_Word

# An s64 in decimal: anything else (1_000, ２, 99999999999999999999) is a word.
_INTEGER = re.compile(r"-?[0-9]+")
_S64 = range(-(2**63), 2**63)


class TextTools(exports.TextTools):
    def count(self, text: str) -> Stats:
        words = text.split()
        # max() keeps the first of equally long words.
        longest = max(words, key=len) if words else None
        return Stats(words=len(words), chars=len(text), longest=longest)

    def reverse(self, text: str) -> str:
        return text[::-1]

    def big(self, n: int, m: int) -> tuple[int, int]:
        return (n, m)

    def tokens(self, text: str) -> list[Token]:
        # Split on every single space, so "a  b" has an empty piece between
        # a and b (a blank), and "" is one blank.
        return [_token(piece) for piece in text.split(" ")]

    def non_empty(self, text: str) -> str:
        if not text:
            raise Err(text)
        return text


def _token(piece: str) -> Token:
    if not piece:
        return Token_Blank()
    if _INTEGER.fullmatch(piece) and int(piece) in _S64:
        return Token_Number(int(piece))
    return Token_Word(piece)
