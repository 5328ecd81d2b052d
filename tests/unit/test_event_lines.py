"""The bytes of an events.jsonl or samples.jsonl line: orjson writes what ``clean`` + ``json`` wrote (the same JSON
values, whatever a record holds), falling back to ``json`` where orjson refuses; several lines go out in one
locked write, all or none."""

from __future__ import annotations

import enum
import errno
import json
import math

import pytest

from trainer_core.contract.run import event_log
from trainer_core.contract.run.event_log import JsonlWriter, dumps, encode_line


class Colour(enum.Enum):
    RED = "red"


class Name(str):
    pass


def zoo() -> dict:
    values = {
        "float": 1.5,
        "small": 1e-05,
        "nan": float("nan"),
        "inf": float("-inf"),
        "enum": Colour.RED,
        "tuple": (1, 2.5, None),
        "nested": {"a": [float("nan"), {"b": True}]},
        "text": "é\x01\u2028</script>",
        "subclass": Name("x"),
        "set": {"only"},
        "big": 2**70,
        "int_keys": {1: "one"},
        "surrogate": "\udc80",
    }
    np = pytest.importorskip("numpy")
    values |= {"f32": np.float32(1.25), "f64": np.float64(2.5), "f64nan": np.float64("nan"), "i64": np.int64(3)}
    values |= {"array": np.array([1, 2]), "flag": np.bool_(True), "inf_in_list": [np.float32("inf")]}
    return values


@pytest.mark.parametrize("key", sorted(zoo()))
def test_a_line_holds_the_values_json_wrote(key):
    record = {"type": "metrics", "step": 3, key: zoo()[key]}
    line = encode_line(record)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == json.loads(dumps(record))


def test_without_orjson_a_line_is_json_s(monkeypatch):
    monkeypatch.setattr(event_log, "orjson", None)
    record = {"step": 1, "reward": float("nan"), "text": "é"}
    assert encode_line(record) == (dumps(record) + "\n").encode()


def test_lines_are_ascii_json_with_no_raw_control_characters():
    text = "a\x1b[31mred\x07\r\n \u009b31m \u202e é 字"
    line = encode_line({"completion": text, "value": float("inf")})
    assert line.isascii() and all(0x20 <= byte < 0x7F for byte in line[:-1])
    assert json.loads(line) == {"completion": text, "value": None}
    assert not math.isnan(json.loads(encode_line({"v": 0.1}))["v"])


def test_text_past_ascii_is_escaped_as_json_escapes_it_without_the_json_way(monkeypatch):
    """A small model's completions are full of U+FFFD and stray scripts: orjson still writes them (the ``json``
    way copies the record through ``clean`` first, twice the cost), then each character past ASCII becomes the
    ``\\u`` escape ``json`` writes, a surrogate pair past the BMP."""
    text = '\ufffd\ufffdrome 字\u009b\u202e é 😀 \x10"q\\'
    record = {"step": 1, "completion": text, "reward": 0.25, "columns": {"target": "é"}}
    expected = (dumps(record) + "\n").encode()
    monkeypatch.setattr(event_log, "dumps", lambda record: pytest.fail("went the json way"))
    line = encode_line(record)
    assert line.isascii() and json.loads(line) == json.loads(expected)
    assert b"\\ud83d\\ude00" in line and b"\\u202e" in line and b"\\u009b" in line


class CountingWriter(JsonlWriter):
    """Counts its ``write`` calls; with ``room`` set, the disk fills after that many more bytes."""

    def __init__(self, path):
        super().__init__(path)
        self.calls, self.room = 0, None

    def _write_some(self, data: memoryview) -> int:
        self.calls += 1
        if self.room is None:
            return super()._write_some(data)
        if self.room == 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        taken = super()._write_some(data[: self.room])
        self.room -= taken
        return taken


def test_several_lines_go_out_in_one_write(tmp_path):
    path = tmp_path / "samples.jsonl"
    writer = CountingWriter(path)
    writer.write_many({"step": 1, "i": i} for i in range(8))
    writer.write_many([])
    writer.close()
    assert writer.calls == 1
    assert [json.loads(line)["i"] for line in path.read_text().splitlines()] == list(range(8))


def test_a_batch_that_fails_part_way_leaves_none_of_its_lines(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_bytes(b'{"kept":1}\n')
    writer = CountingWriter(path)
    batch = [{"step": 2, "i": i, "pad": "x" * 20} for i in range(4)]
    writer.room = len(encode_line(batch[0])) + 10  # the first line fits, the second does not
    with pytest.raises(OSError) as raised:
        writer.write_many(batch)
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(path)
    assert path.read_bytes() == b'{"kept":1}\n'
    writer.room = None
    writer.write_many([{"step": 3}])
    writer.close()
    assert path.read_bytes() == b'{"kept":1}\n{"step":3}\n'
