"""`elfkit.loader.tags` is public: its ELF constants agree with pyelftools' tables."""
import importlib

from elftools.elf import enums

from elfkit.loader import tags


def test_tags_module_is_public_and_private_one_is_gone():
    assert importlib.util.find_spec("elfkit.loader._tags") is None
    assert importlib.import_module("elfkit.loader.tags") is tags


ALIASES = {"STT_GNU_IFUNC": "STT_LOOS"}     # pyelftools names the GNU value by its range


def test_constants_match_pyelftools():
    checked = 0
    tables = {"ET_": enums.ENUM_E_TYPE, "PT_": enums.ENUM_P_TYPE_BASE, "DT_": enums.ENUM_D_TAG,
              "STB_": enums.ENUM_ST_INFO_BIND, "STT_": enums.ENUM_ST_INFO_TYPE,
              "STV_": enums.ENUM_ST_VISIBILITY, "DF_": enums.ENUM_DT_FLAGS}
    for name in dir(tags):
        value = getattr(tags, name)
        for prefix, table in tables.items():
            if name.startswith(prefix) and not name.endswith("_NAMES") and isinstance(value, int):
                assert table[ALIASES.get(name, name)] == value, name
                checked += 1
    assert checked > 60


def test_name_tables_match_pyelftools():
    for value, name in tags.DT_NAMES.items():
        assert enums.ENUM_D_TAG["DT_" + name] == value
    for value, name in tags.PT_NAMES.items():
        if "/" not in name and value < 0x70000000:
            assert enums.ENUM_P_TYPE_BASE["PT_" + name] == value


def test_tools_use_the_public_module():
    from elfkit.tools import inspect, run
    assert inspect.T is tags
    with open(run.__file__) as f:
        assert "loader._tags" not in f.read()
