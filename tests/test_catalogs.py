"""load_catalog: the embedded default catalog and catalog files (YAML or JSON)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from plastic.catalogs import DEFAULT_CATALOG_NAME, load_catalog
from plastic.core.errors import CatalogError
from plastic.core.model import InstanceType
from tests.data_paths import CATALOG, REPO, needs

CSV = CATALOG / "ec2_us-east-1_m5c5r5.csv"
ADVISOR = CATALOG / "spot-advisor-data.json"

# The figures of ec2_us-east-1_m5c5r5.csv: name, vcpus, GiB, on-demand $/h, spot $/h, band.
EXPECTED = [
    ("m5.large", 2, 8, 0.096, 0.0326, "15-20%"),
    ("m5.xlarge", 4, 16, 0.192, 0.0653, ">20%"),
    ("m5.2xlarge", 8, 32, 0.384, 0.1766, "10-15%"),
    ("m5.4xlarge", 16, 64, 0.768, 0.3226, "15-20%"),
    ("c5.large", 2, 4, 0.085, 0.0349, "<5%"),
    ("c5.xlarge", 4, 8, 0.17, 0.0748, "<5%"),
    ("c5.2xlarge", 8, 16, 0.34, 0.1496, "5-10%"),
    ("c5.4xlarge", 16, 32, 0.68, 0.2312, ">20%"),
    ("r5.large", 2, 16, 0.126, 0.0504, "<5%"),
    ("r5.xlarge", 4, 32, 0.252, 0.0781, "15-20%"),
    ("r5.2xlarge", 8, 64, 0.504, 0.1966, ">20%"),
    ("r5.4xlarge", 16, 128, 1.008, 0.3528, ">20%"),
]


class TestDefaultCatalog:
    def test_has_the_twelve_types_with_their_figures(self) -> None:
        cat = load_catalog(None)
        got = {t.name: t for t in cat.instance_types}
        assert len(cat.instance_types) == 12
        for name, vcpus, gib, od, spot, band in EXPECTED:
            assert got[name] == InstanceType(name, vcpus, gib * 1024, od, spot, band)

    def test_metadata(self) -> None:
        cat = load_catalog(None)
        assert cat.region == "us-east-1"
        assert cat.retrieved == "2025-06-28"
        assert "Spot Instance Advisor" in cat.source and "spotinfo" in cat.source

    def test_file_states_source_and_method(self) -> None:
        text = (resources.files("plastic") / "data" / DEFAULT_CATALOG_NAME).read_text(encoding="utf-8")
        assert "on-demand x (1 - advisor savings %)" in text
        assert "2025-06-28" in text and "alexei-led/spotinfo" in text

    def test_is_cached_and_equal(self) -> None:
        assert load_catalog(None) is load_catalog(None)

    @needs(CSV)
    def test_matches_the_csv_it_was_made_from(self) -> None:
        got = {t.name: t for t in load_catalog(None).instance_types}
        with CSV.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert {r["instance_type"] for r in rows} == set(got)
        for r in rows:
            t = got[r["instance_type"]]
            assert t.vcpus == int(r["vcpus"])
            assert t.ram_mib == round(float(r["memory_gib"]) * 1024)
            assert t.on_demand_usd_per_hour == float(r["ondemand_usd_per_h"])
            assert t.spot_usd_per_hour == float(r["spot_est_usd_per_h"])
            assert t.spot_interruption_band == r["interruption_band"]

    @needs(ADVISOR)
    def test_spot_prices_follow_the_advisor(self) -> None:
        advisor = json.loads(ADVISOR.read_text())
        labels = [r["label"] for r in sorted(advisor["ranges"], key=lambda r: r["index"])]
        linux = advisor["spot_advisor"]["us-east-1"]["Linux"]
        for t in load_catalog(None).instance_types:
            row = linux[t.name]
            assert t.spot_usd_per_hour == round(t.on_demand_usd_per_hour * (1 - row["s"] / 100), 4)
            assert t.spot_interruption_band == labels[row["r"]]


GOOD_YAML = """\
# a catalog
source: my prices
retrieved: 2024-01-31   # unquoted: YAML reads a date
instance_types:
  - name: big.box
    vcpus: 64
    ram_mib: 262144
    on_demand_usd_per_hour: 2.5
  - {name: small.box, vcpus: 1, ram_mib: 512, on_demand_usd_per_hour: 0.01, spot_usd_per_hour: 0.004,
     spot_interruption_band: "5-10%"}
"""


class TestFiles:
    def test_yaml(self, tmp_path: Path) -> None:
        path = tmp_path / "cat.yaml"
        path.write_text(GOOD_YAML)
        cat = load_catalog(str(path))
        assert [t.name for t in cat.instance_types] == ["big.box", "small.box"]
        assert cat.retrieved == "2024-01-31" and cat.source == "my prices"
        assert cat.instance_types[1].spot_interruption_band == "5-10%"

    def test_json_by_content_whatever_the_name(self, tmp_path: Path) -> None:
        doc = {"instance_types": [{"name": "j", "vcpus": 2, "ram_mib": 1024, "on_demand_usd_per_hour": 0.1}]}
        path = tmp_path / "catalog.conf"
        path.write_text("\n  " + json.dumps(doc, indent=2))
        assert load_catalog(str(path)).instance_types[0].name == "j"

    def test_path_object_and_bom(self, tmp_path: Path) -> None:
        path = tmp_path / "cat.yml"
        path.write_bytes(b"\xef\xbb\xbf" + GOOD_YAML.encode())
        assert len(load_catalog(path).instance_types) == 2  # type: ignore[arg-type]

    def test_field_errors_carry_the_path(self, tmp_path: Path) -> None:
        path = tmp_path / "cat.yaml"
        path.write_text(GOOD_YAML.replace("vcpus: 64", "vcpus: many"))
        with pytest.raises(CatalogError) as info:
            load_catalog(str(path))
        assert info.value.source == str(path)
        assert str(info.value).startswith(f"{path}: instance_types[0].vcpus: ")

    def test_missing_file(self, tmp_path: Path) -> None:
        path = str(tmp_path / "nope.yaml")
        with pytest.raises(CatalogError) as info:
            load_catalog(path)
        assert info.value.source == path and "no such" in str(info.value)

    def test_directory(self, tmp_path: Path) -> None:
        with pytest.raises(CatalogError) as info:
            load_catalog(str(tmp_path))
        assert info.value.source == str(tmp_path) and "directory" in str(info.value)

    @pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
    def test_unreadable(self, tmp_path: Path) -> None:
        path = tmp_path / "cat.yaml"
        path.write_text(GOOD_YAML)
        path.chmod(0)
        with pytest.raises(CatalogError) as info:
            load_catalog(str(path))
        assert "cannot read" in str(info.value)

    def test_not_utf8(self, tmp_path: Path) -> None:
        path = tmp_path / "cat.yaml"
        path.write_bytes(b"source: caf\xe9\n")
        with pytest.raises(CatalogError) as info:
            load_catalog(str(path))
        assert "UTF-8" in str(info.value) and info.value.source == str(path)

    def test_bad_yaml_gives_the_line(self, tmp_path: Path) -> None:
        path = tmp_path / "cat.yaml"
        path.write_text("source: x\ninstance_types:\n  - name: a\n   vcpus: [1, 2\n")
        with pytest.raises(CatalogError) as info:
            load_catalog(str(path))
        text = str(info.value)
        assert info.value.source == str(path)
        assert text.startswith(f"{path}: invalid YAML at line 4")
        assert "\n" not in text

    def test_bad_json_gives_line_and_column(self, tmp_path: Path) -> None:
        path = tmp_path / "cat.json"
        path.write_text('{"instance_types": [\n  {"name": "a",}\n]}')
        with pytest.raises(CatalogError) as info:
            load_catalog(str(path))
        assert "invalid JSON at line 2, column" in str(info.value)

    @pytest.mark.parametrize(("content", "words"), [("", "must be a mapping"), ("- a\n- b\n", "must be a mapping"),
                                                    ("just text", "must be a mapping")])
    def test_empty_or_not_a_mapping(self, tmp_path: Path, content: str, words: str) -> None:
        path = tmp_path / "cat.yaml"
        path.write_text(content)
        with pytest.raises(CatalogError) as info:
            load_catalog(str(path))
        assert words in str(info.value) and info.value.source == str(path)

    def test_yaml_tags_are_refused_by_the_safe_loader(self, tmp_path: Path) -> None:
        path = tmp_path / "cat.yaml"
        path.write_text("!!python/object/apply:os.system ['true']\n")
        with pytest.raises(CatalogError):
            load_catalog(str(path))


def test_import_stays_light() -> None:
    code = ("import sys, plastic.catalogs, plastic.traces; "
            "heavy = [m for m in ('rich', 'cwltool', 'yaml') if m in sys.modules]; "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == ""
