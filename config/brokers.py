"""The embedded broker of `make run`: kombu's filesystem transport, with messages written atomically.

kombu writes a message file in place (open, then write), and a consumer that
lists the folder between the two moves away an empty file and dies decoding
it ("Expecting value: line 1 column 1"): the worker exits and `make run`
stops. Here a message is written under a name no consumer matches, then
renamed into place, which is atomic on one filesystem.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class AtomicFilesystemChannel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = f"{final}.part"  # `_get` takes only names ending in "<queue>.msg"
        try:
            with open(partial, "wb") as message:
                message.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot add file {final!r} to directory") from exc


class AtomicFilesystemTransport(filesystem.Transport):
    Channel = AtomicFilesystemChannel

    @property
    def default_connection_params(self):
        # Folders, not a host: without this kombu warns "No hostname was supplied" at every connection.
        return {}
