"""No secret in any output: a password in the URL's password field or in a
query parameter (``?password=``, ``sslpassword``, ...) is shown as ``***`` in the
saver's errors and in the CLI's output."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.sqlalchemy import CheckpointConnectionError, SQLAlchemySaver, cli
from langgraph.checkpoint.sqlalchemy._codec.display import masked_text, shown_url

from ..provision import BACKENDS

SECRET = "S3cretValue42"
#: Servers that are down (port 1), with the secret in every position a URL can carry one.
DOWN = {
    "postgres": f"postgresql+psycopg://root:{SECRET}@127.0.0.1:1/db"
    f"?password={SECRET}&sslpassword={SECRET}&application_name=x",
    "mariadb": f"mysql+pymysql://root:{SECRET}@127.0.0.1:1/db?password={SECRET}",
}


def test_shown_url_hides_the_password_field_and_secret_parameters() -> None:
    shown = shown_url(DOWN["postgres"])
    assert SECRET not in shown
    assert "application_name=x" in shown  # the rest stays readable
    assert shown.count("***") == 3
    assert SECRET not in masked_text(f"failed at {DOWN['postgres']} (retry)")
    assert SECRET not in shown_url(f"not a url://x:{SECRET}@h/?Password={SECRET}")


@pytest.mark.parametrize("backend", [b for b in DOWN if b in BACKENDS])
def test_saver_errors_show_no_secret(backend: str) -> None:
    saver = SQLAlchemySaver.from_conn_string(DOWN[backend], retry_timeout=0)
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    for call in (saver.setup, lambda: saver.put(config, empty_checkpoint(), {}, {})):
        with pytest.raises(CheckpointConnectionError) as caught:
            call()
        assert SECRET not in str(caught.value)
        assert "***" in str(caught.value)
    saver.close()


@pytest.mark.parametrize("backend", [b for b in DOWN if b in BACKENDS])
def test_cli_output_shows_no_secret(backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["threads", "list"], ["stats"], ["current"]):
        code = cli.main([*argv, "--url", DOWN[backend]])
        out, err = capsys.readouterr()
        assert code == 1, (argv, out, err)
        assert SECRET not in out + err, argv


def test_open_source_errors_show_no_secret() -> None:
    """``transfer.open_source`` quoted the URL it refuses as given."""
    from langgraph.checkpoint.sqlalchemy.transfer import UnknownSourceError, open_source

    with (
        pytest.raises(UnknownSourceError) as caught,
        open_source(f"sqlite:///:memory:?password={SECRET}"),
    ):
        pass
    assert SECRET not in str(caught.value) and "***" in str(caught.value)
