"""Apprise really delivering fleetmon's messages to servers on 127.0.0.1, in each service's own format.

Slack, Discord, WeCom, DingTalk, Feishu and Lark: Apprise's plugins for these post
to the vendors' fixed hosts (hooks.slack.com, discord.com, qyapi.weixin.qq.com,
oapi.dingtalk.com, open.feishu.cn, open.larksuite.com) over HTTPS, with no option
naming another host. The tests make the local server this process's HTTPS proxy
(``HTTPS_PROXY``, honoured by requests under Apprise): it accepts the tunnel, ends
TLS with a throw-away certificate (the URLs say ``verify=no``, Apprise's own
option) and receives the request the plugin built for the vendor, which is checked
field by field. The generic ``json://`` plugin posts straight to 127.0.0.1, and
mail goes to a real SMTP server (aiosmtpd).
"""

from __future__ import annotations

import email
import email.policy
from pathlib import Path

from helpers.notify_servers import lost, store
from fleetmon.fleet import parse_fleet
from fleetmon.notify import Notifier

UUID = "GPU-6f0c2b1e-aaaa-bbbb-cccc-0123456789ab"
SECRETS = {
    "slack": ("slack://{secret}/#gpu-ops?verify=no", "T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7"),
    "discord": ("discord://{secret}?verify=no", "4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js"),
    "wecom": ("wecombot://{secret}?verify=no", "0a1b2c3d-wecom-robot-key"),
    "dingtalk": ("dingtalk://{secret}?verify=no", "d1n6t4lk0ken0123456789abcdef"),
    "feishu": ("feishu://{secret}?verify=no", "f3ishu-hook-0123-4567"),
    "lark": ("lark://{secret}?verify=no", "l4rk-hook-0123-4567"),
}
# (vendor host, path the token makes, how the message text sits in the JSON)
EXPECT = {
    "slack": ("hooks.slack.com", "/services/T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7",
              lambda j: j["attachments"][0]["title"] + "\n" + j["attachments"][0]["text"]),
    "discord": ("discord.com", "/api/webhooks/4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js", lambda j: j["content"]),
    "wecom": ("qyapi.weixin.qq.com", "/cgi-bin/webhook/send?key=0a1b2c3d-wecom-robot-key",
              lambda j: j["msgtype"] == "text" and j["text"]["content"]),
    "dingtalk": ("oapi.dingtalk.com", "/robot/send?access_token=d1n6t4lk0ken0123456789abcdef",
                 lambda j: j["msgtype"] == "text" and j["text"]["content"]),
    "feishu": ("open.feishu.cn", "/open-apis/bot/v2/hook/f3ishu-hook-0123-4567/",
               lambda j: j["msg_type"] == "text" and j["content"]["text"]),
    "lark": ("open.larksuite.com", "/open-apis/bot/v2/hook/l4rk-hook-0123-4567",
             lambda j: j["msg_type"] == "text" and j["content"]["text"]),
}


def _check_message(text: str, db_path: str) -> None:
    """Node, GPU, kind, severity, the evidence in one line, the action and the command to open it."""
    assert "CRITICAL gpu-lost: node7" in text
    assert f"Node: node7   GPU: {UUID}" in text
    assert "gpu-lost, critical (new)" in text
    assert f"Evidence: node7 {UUID}: GPU lost (fell off the bus), Xid 79 at 12:01 UTC" in text
    assert "Action: Drain the node and reseat or replace the card" in text
    assert f"Open: fleetmon resolve --db {db_path} --list --node node7 --gpu {UUID} --kind gpu-lost" in text


def test_each_vendor_format_is_delivered_with_the_finding(tmp_path: Path, proxy, hook, smtp, db_path: str) -> None:
    tables = []
    for name, (url, secret) in SECRETS.items():
        file = tmp_path / f"{name}.secret"
        file.write_text(secret + "\n", encoding="utf-8")
        file.chmod(0o600)
        tables.append(f'[[notify]]\nname = "{name}"\nurl = "{url}"\nsecret_file = "{file}"\ndigest = false\n')
    tables.append(f'[[notify]]\nname = "hook"\nurl = "json://127.0.0.1:{hook.port}/fleetmon"\ndigest = false\n')
    tables.append(f'[[notify]]\nname = "mail"\nurl = "mailto://127.0.0.1:{smtp.port}?from=fleetmon@example.com'
                  f'&to=oncall@example.com&mode=insecure"\ndigest = false\n')
    fleet = parse_fleet('[[node]]\nname = "node7"\nurl = "http://127.0.0.1:9"\n' + "\n".join(tables))
    notifier = Notifier(fleet, db_path)
    assert notifier.errors == []
    notifier.start()
    try:
        from storage.db import open_database

        db = open_database(db_path)
        assert notifier.after_health(db, store(db_path, [lost("node7", UUID)]), 1_790_000_100.0) == 8
        db.close()
        assert notifier.flush(30)
    finally:
        notifier.stop()

    by_host = {r.host: r for r in proxy.wait_for(len(SECRETS))}
    for name, (host, path, text_of) in EXPECT.items():
        got = by_host[host]
        assert got.path == path, name
        text = text_of(got.json())
        assert text, name
        _check_message(text, db_path)

    (posted,) = hook.wait_for(1)
    assert posted.path == "/fleetmon"
    body = posted.json()
    _check_message(body["title"] + "\n" + body["message"], db_path)

    (envelope,) = smtp.wait_for(1)
    assert envelope.rcpt_tos == ["oncall@example.com"]
    mail = email.message_from_bytes(envelope.content, policy=email.policy.default)
    assert mail["Subject"] == f"[fleetmon] CRITICAL gpu-lost: node7 {UUID}"
    part = mail.get_body(preferencelist=("plain",))
    assert part is not None
    _check_message(mail["Subject"] + "\n" + part.get_content(), db_path)
