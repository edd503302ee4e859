"""The schema half of mcp_tool, outside a component (no bindings needed):
what each annotation becomes, what is required, and how JSON arguments are
converted back. Run: python3 -m unittest discover -s guest-tools/python/tests
"""

import enum
import sys
import unittest
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, NotRequired, Optional, TypedDict, Union

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp_tool import Context, _convert, input_schema, output_schema, schema_of  # noqa: E402


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Point:
    x: float
    y: float = 0.0
    tags: list[str] = field(default_factory=list)


class Summary(TypedDict):
    count: int
    note: NotRequired[str]


class SchemaOf(unittest.TestCase):
    def test_primitives(self):
        self.assertEqual(schema_of(str), {"type": "string"})
        self.assertEqual(schema_of(int), {"type": "integer"})
        self.assertEqual(schema_of(float), {"type": "number"})
        self.assertEqual(schema_of(bool), {"type": "boolean"})

    def test_containers(self):
        self.assertEqual(schema_of(list[int]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(schema_of(list), {"type": "array"})
        self.assertEqual(
            schema_of(dict[str, float]), {"type": "object", "additionalProperties": {"type": "number"}}
        )
        self.assertEqual(
            schema_of(tuple[int, str]),
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        )

    def test_optional_and_unions(self):
        self.assertEqual(schema_of(Optional[int]), {"type": ["integer", "null"]})
        self.assertEqual(schema_of(int | None), {"type": ["integer", "null"]})
        self.assertEqual(
            schema_of(Optional[list[int]]),
            {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
        )
        self.assertEqual(schema_of(Union[int, str]), {"anyOf": [{"type": "integer"}, {"type": "string"}]})

    def test_literals_and_enums(self):
        self.assertEqual(schema_of(Literal["a", "b"]), {"type": "string", "enum": ["a", "b"]})
        self.assertEqual(schema_of(Literal[1, "b"]), {"enum": [1, "b"]})
        self.assertEqual(schema_of(Colour), {"type": "string", "enum": ["red", "green"]})

    def test_annotated_adds_a_description_or_keywords(self):
        self.assertEqual(
            schema_of(Annotated[int, "How many", {"minimum": 1}]),
            {"type": "integer", "description": "How many", "minimum": 1},
        )

    def test_dataclasses_and_typeddicts(self):
        self.assertEqual(
            schema_of(Point),
            {
                "type": "object",
                "properties": {
                    "x": {"type": "number"},
                    "y": {"type": "number", "default": 0.0},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["x"],
            },
        )
        self.assertEqual(
            schema_of(Summary),
            {
                "type": "object",
                "properties": {"count": {"type": "integer"}, "note": {"type": "string"}},
                "required": ["count"],
            },
        )

    def test_unknown_types_are_refused(self):
        with self.assertRaises(TypeError):
            schema_of(bytes)


def search(
    ctx: Context,
    query: Annotated[str, "What to look for"],
    limit: int = 10,
    mode: Literal["fast", "thorough"] = "fast",
    near: Optional[Point] = None,
) -> Summary:
    """Searches."""
    raise NotImplementedError


class ToolSchemas(unittest.TestCase):
    def test_parameters_make_the_input_schema_and_context_is_left_out(self):
        self.assertEqual(
            input_schema(search),
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for"},
                    "limit": {"type": "integer", "default": 10},
                    "mode": {"type": "string", "enum": ["fast", "thorough"], "default": "fast"},
                    "near": {"anyOf": [schema_of(Point), {"type": "null"}], "default": None},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        )

    def test_a_dataclass_or_typeddict_return_is_the_output_schema(self):
        self.assertEqual(output_schema(search), schema_of(Summary))

        def plain() -> str:
            return ""

        self.assertIsNone(output_schema(plain))

    def test_arguments_are_converted_to_their_annotations(self):
        self.assertEqual(_convert({"x": 1, "tags": ["a"]}, Optional[Point]), Point(x=1, tags=["a"]))
        self.assertEqual(_convert("red", Colour), Colour.RED)
        self.assertEqual(_convert([[1, 2]], list[tuple[int, int]]), [(1, 2)])
        self.assertIsInstance(_convert(3, float), float)


if __name__ == "__main__":
    unittest.main()


class TemplateMatching(unittest.TestCase):
    """`match_template` follows the host's rule (host/src/component/uri_template.rs):
    a `{name}` matches one or more characters other than `/`, up to the first
    place the text after it matches."""

    def test_a_variable_takes_one_segment_or_part_of_one(self):
        from mcp_tool import match_template

        self.assertEqual(match_template("test://template/{id}/data", "test://template/123/data"), {"id": "123"})
        self.assertIsNone(match_template("test://template/{id}/data", "test://template/1/2/data"))
        self.assertIsNone(match_template("test://template/{id}/data", "test://template//data"))
        self.assertEqual(
            match_template("file:///{dir}/{name}.txt", "file:///notes/today.txt"), {"dir": "notes", "name": "today"}
        )
        self.assertIsNone(match_template("db://orders/{id}", "db://orders/42/x"))
