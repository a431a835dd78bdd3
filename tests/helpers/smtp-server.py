# An SMTP server for the e-mail channel tests (aiosmtpd), run inside the
# outbound test namespace so the channel reaches it through the real outbound
# policy. tests/helpers/outbound-smtp.ts starts it:
#
#   python smtp-server.py <cert dir> <record file> <user> <password>
#
# IPv4 only; one port per behaviour (the e-mail channel connects only to 25, 465, 587, 2525):
#   587   STARTTLS required, then AUTH; certificate good.crt (the test hostnames)
#   465   implicit TLS, AUTH; certificate good.crt
#   25    STARTTLS offered with nohost.crt (another hostname, the right IPs)
#   2525  plain, no STARTTLS and no AUTH
# On every port the recipient decides the answer: reject@... gets 550 with a
# text, hang@... never gets one. Each accepted message is appended to the
# record file as one JSON line. Prints {"ready":true} once all four listen.
import asyncio
import json
import logging
import ssl
import sys

from aiosmtpd.smtp import SMTP, AuthResult

cert_dir, record_path, user, password = sys.argv[1:5]
# Nobody reads the server's output after it is ready: a full pipe would stall it.
logging.disable(logging.CRITICAL)

# The SNI each TLS connection sent, by its SSLObject (server side has no other record of it).
sni_by_conn: dict[int, str | None] = {}


def tls_context(name: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(f"{cert_dir}/{name}.crt", f"{cert_dir}/{name}.key")
    ctx.sni_callback = lambda obj, server_name, _ctx: sni_by_conn.__setitem__(id(obj), server_name)
    return ctx


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = auth_data.login.decode() == user and auth_data.password.decode() == password
    return AuthResult(success=ok, handled=False, auth_data=auth_data)


class Recorder:
    def __init__(self, port: int):
        self.port = port

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.startswith("hang@"):
            await asyncio.sleep(3600)
        if address.startswith("reject@"):
            return "550 5.1.1 <" + address + "> mailbox unavailable (test rejection)"
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server, session, envelope):
        tls = server.transport.get_extra_info("ssl_object")
        record = {
            "port": self.port,
            "peer": session.peer[0],
            "tls": tls.version() if tls else None,
            "sni": sni_by_conn.get(id(tls)) if tls else None,
            "login": session.login_data.decode() if isinstance(session.login_data, bytes) else None,
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "data": envelope.content.decode("utf-8", "replace"),
        }
        with open(record_path, "a") as f:
            f.write(json.dumps(record) + "\n")
        return "250 2.0.0 queued as svc-test"


async def main():
    loop = asyncio.get_running_loop()
    good = tls_context("good")

    async def serve(port: int, implicit: ssl.SSLContext | None = None, **kwargs):
        def factory():
            return SMTP(Recorder(port), hostname="smtp.svc-test.example", authenticator=authenticator, **kwargs)

        await loop.create_server(factory, host="0.0.0.0", port=port, ssl=implicit)

    await serve(587, tls_context=good, require_starttls=True)
    # Implicit TLS: aiosmtpd sees no STARTTLS, so it must not insist on one before AUTH.
    await serve(465, implicit=good, auth_require_tls=False)
    await serve(25, tls_context=tls_context("nohost"))
    await serve(2525)
    print(json.dumps({"ready": True}, separators=(",", ":")), flush=True)
    await asyncio.Event().wait()


asyncio.run(main())
