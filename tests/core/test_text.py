from fleetmon.text import printable


def test_controls_become_visible_escapes():
    assert printable("A100\x1b[2J\x07\x00x") == "A100\\x1b[2J\\x07\\x00x"
    assert printable("a\tb\nc") == "a\\x09b\\x0ac"
    assert printable("\x9b31m") == "\\x9b31m"
    assert printable("abc\u202eevil") == "abc\\u202eevil"


def test_plain_text_and_unicode_pass_and_limit_cuts():
    assert printable("NVIDIA A100-SXM4-80GB · 温度") == "NVIDIA A100-SXM4-80GB · 温度"
    assert printable("x" * 10, limit=5) == "xxxx…"
