"""The collector's device-id check takes other vendors' own ids (issue 23) and still refuses garbage."""

from __future__ import annotations

import pytest

from fleetmon.collector.validate import UUID_RE


@pytest.mark.parametrize("uuid", [
    "GPU-1b2c3d4e-0000-1111-2222-333344445555", "MIG-GPU-1b2c/1/0", "unknown-gpu-0-0000:41:00.0",
    "lost-gpu-3-0000:41:00.0",
    "NPU-0000:c1:00.0-0-1",                      # the Ascend parser's id (npu-smi has none)
    "01P4-HL3090A0-18-U4V193-22-07-00",          # a Gaudi 3's own UUID, as hl-smi prints it
    "0x68a1b2c3d4e5f607",                        # an AMD card's unique id
])
def test_device_ids_of_every_vendor_pass(uuid: str) -> None:
    assert UUID_RE.match(uuid)


@pytest.mark.parametrize("uuid", ["", "abc", "GPU-", "GPU-ab\x00cd", "<script>alert(1)</script>", "GPU-<b>",
                                  "short-1", "id with blanks 123", "карта-12345678", "/etc/passwd-123"])
def test_garbage_is_still_no_device_id(uuid: str) -> None:
    assert not UUID_RE.match(uuid)
