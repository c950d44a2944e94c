"""Each setting is described once, in its field of ``app.core.config.Settings``; ``docs/settings.md``,
the README's configuration table and ``serve --help`` are generated from those descriptions."""

from pathlib import Path

import pytest

from app.core import settings_reference
from app.core.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_docs_settings_page_is_generated_from_the_declarations():
    page = ROOT / "docs" / "settings.md"
    assert page.read_text(encoding="utf-8") == settings_reference.markdown(), (
        "regenerate: python -m app.core.settings_reference > docs/settings.md"
    )


def test_readme_settings_table_is_generated_from_the_declarations():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count(settings_reference.README_BEGIN) == 1
    assert readme == settings_reference.with_readme_table(readme), (
        "regenerate: python -m app.core.settings_reference --update-readme"
    )


def test_every_setting_is_documented_with_its_variable_and_default():
    page = settings_reference.markdown()
    assert len(settings_reference.settings()) == len(Settings.model_fields)
    for field in Settings.model_fields.values():
        assert field.description and field.description in page
    assert "| `ACCOUNTANT_MAX_BODY_BYTES` |" in page and "| `1 MiB` | ≥ 1024, ≤ 1024 MiB |" in page
    assert "| `ACCOUNTANT_LOG_LEVEL` (also `LOG_LEVEL`) |" in page


def test_a_setting_missing_from_the_sections_is_refused(monkeypatch):
    sections = settings_reference.SECTIONS[:-1]  # drops the database-fault settings
    monkeypatch.setattr(settings_reference, "SECTIONS", sections)
    with pytest.raises(AssertionError, match="db_timeout"):
        settings_reference.settings()
