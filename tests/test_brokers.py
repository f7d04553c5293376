"""The embedded broker writes each message whole: no consumer can see a message file before its content."""

from kombu import Connection
from kombu.utils.json import dumps as kombu_dumps

from config.brokers import AtomicFilesystemTransport


def test_no_message_file_exists_until_its_content_is_written(tmp_path, monkeypatch):
    seen_while_writing = []

    def spying_dumps(payload):
        # The moment the body is being serialized: what could a consumer listing the folder take now?
        seen_while_writing.extend(p.name for p in tmp_path.iterdir() if p.name.endswith(".jobs.msg"))
        return kombu_dumps(payload)

    monkeypatch.setattr("config.brokers.dumps", spying_dumps)
    monkeypatch.setattr("kombu.transport.filesystem.dumps", spying_dumps)
    connection = Connection(
        transport=AtomicFilesystemTransport,
        transport_options={
            "data_folder_in": str(tmp_path),
            "data_folder_out": str(tmp_path),
            "store_processed": False,
        },
    )
    try:
        connection.default_channel._put("jobs", {"body": "whole"})

        assert seen_while_writing == []
        assert connection.default_channel._get("jobs") == {"body": "whole"}
        assert list(tmp_path.iterdir()) == []  # nothing left behind
    finally:
        connection.release()
