"""Whether a URL the caller gave names an HTTP endpoint: a base URL of the Gemini API, an MCP server's; and whether
a URL a model asks to fetch names this machine or its network (`local_target`).

One check for both endpoints, in unified's words: a URL either fails only at its first request, in the HTTP
client's words (an `InvalidURL`, an `OverflowError`, `internal_error` or a retry that cannot help), and the URL
parser's own errors quote the parts a token may stand in.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import re
import socket
import unicodedata
from urllib.parse import SplitResult, unquote, urlsplit

import anyio

__all__ = [
    "PROXY_VARIABLES",
    "RESOLVE_TIMEOUT_S",
    "base_url_refusal",
    "local_target",
    "resolves_locally",
    "url_problem",
]

_IPV4_LIKE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
"""A host the HTTP client (httpx) takes for an IPv4 address, and refuses unless it is one (`999.1.1.1`)."""


@functools.lru_cache(maxsize=64)
def url_problem(url: str) -> str | None:
    """Why `url` is no http(s) URL an HTTP client can connect to, or None. In unified's words, never the
    parser's: its errors quote the URL's parts (`Port could not be cast to integer value as 'tok_live_...'`,
    `netloc '...' contains invalid characters`, `Invalid IDNA hostname: '...'`), and a gateway's URL may carry a
    token there. Whitespace at either end, or in the scheme, host or port, is refused (a URL copied with a space or
    a line break passed here and failed at the first request: the host read as empty, `exa%20mple.com` looked up,
    a line break refused by the client); in the path or query it is kept, as an HTTP client sends it (`%20`).
    Kept per URL (it reads nothing but the URL, and IDNA's tables): the same base URL is checked at every run's
    start, ~40 us each time (a warm Codex run's client CPU is ~4.5 ms)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url.strip()):
        return "it holds a control character (a tab or a line break?)"
    if url != url.strip():
        return "it starts or ends with whitespace (a space or a line break copied with it?)"
    try:
        parts = urlsplit(url)
        port = parts.port  # a port of letters, or past 65535, raises here
    except ValueError as exc:
        if "Port" in str(exc):
            return "its port is not a number of 1-65535"
        if "IPv6" in str(exc):
            return "its IPv6 host's `[` is not closed by `]`"
        return "its host holds characters a URL cannot (after Unicode normalization)"
    if parts.scheme not in ("http", "https"):
        return f"its scheme is {parts.scheme!r}, not http or https" if parts.scheme else "it has no http:// or https://"
    if not parts.hostname:
        return "it names no host"
    if any(c.isspace() for c in parts.netloc):
        return "its user, host or port holds whitespace"
    if port == 0:
        return "its port is 0"
    return _host_problem(parts.hostname)


def base_url_refusal(
    url: str, source: str, sender: str, *, setting: str | None = None, form: str = "a host, a port of 1-65535, a path"
) -> tuple[str, str] | None:
    """(message, hint) of a `configuration_error` for a base URL no request can be sent to, or None for one that
    can: every backend, binary or API, says it in these words, before anything starts or is sent (the API
    backends said `auth_error`, though no credential would help). `source` is where the URL came from
    ("GOOGLE_GEMINI_BASE_URL", "the base_url option"), `sender` what would send to it ("Codex", "google-genai"),
    `setting` what to change (`source` unless given), `form` what a good URL looks like. The URL itself is never
    repeated (a gateway's may carry a token)."""
    why = url_problem(url)
    if why is None:
        return None
    return (
        f"the base URL in {source} is not one {sender} can send requests to: {why}",
        f"set {setting or source} to an http:// or https:// URL ({form}), or unset it",
    )


def _host_problem(host: str) -> str | None:
    """Why the HTTP client cannot encode `host` (lower case, brackets gone) for a request, or None: an
    internationalized name that IDNA refuses (a zero-width space, `⒈`, a bad `xn--` label), a would-be IPv4
    address. Checked as httpx does, since google-genai sends through it."""
    if _IPV4_LIKE.fullmatch(host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return "its host looks like an IPv4 address but is not one"
        return None
    if host.isascii() and not any(label.startswith("xn--") for label in host.split(".")):
        return None
    if ":" in host:  # an IPv6 address, checked by urlsplit
        return None
    import idna  # httpx's own dependency; loaded only for a name that is not plain ASCII

    try:
        idna.decode(host) if host.isascii() else idna.encode(host)
    except (idna.IDNAError, UnicodeError, ValueError):
        return "its host is not a valid internationalized domain name (IDNA refuses it)"
    return None


_LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "metadata", "instance-data")
"""Host names that resolve to this machine or its cloud's metadata service; a name ending in `.localhost`,
`.internal` (`metadata.google.internal`) or `.local` (mDNS) is read as one too."""

_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
"""The full stops IDNA reads as `.` in a host."""

_EMBEDDED_IPV4 = re.compile(r"(?:^|[.-])((?:[0-9]{1,3}[.-]){3}[0-9]{1,3})(?:$|[.-])")
"""Four numbers in a host name (`169.254.169.254.nip.io`, `10-0-0-1.sslip.io`): wildcard DNS answers with them."""


def local_target(url: str) -> str | None:
    """Why a fetch of `url` may reach this machine, its network or its cloud's metadata service (a loopback,
    private, link-local, shared, reserved or unspecified address, or a name that resolves to one), or None. A
    host is read as a WHATWG URL parser (Node's, the Claude CLI's) reads it: `127.1`, `2130706433`, `0x7f.0.0.1`
    and `0177.0.0.1` are all 127.0.0.1, and `[::ffff:a9fe:a9fe]` is 169.254.169.254. A name is not looked up
    (its answer may change by the time the fetch resolves it): one of the names above, or one carrying four
    numbers that wildcard DNS answers with, counts; any other public name does not. Where Node's parser and
    urlsplit read two hosts (`_hosts`), each is judged."""
    try:
        hosts = _hosts(url)
    except ValueError:
        return "its host cannot be read"
    for host in hosts:
        reason = _local_host(host)
        if reason is not None:
            return reason
    return None


def _local_host(host: str) -> str | None:
    """Why a fetch of `host` (as `_host` reads it) may reach this machine or its network, or None (`local_target`)."""
    if not host:
        return "it names no host"
    address = _ip_address(host)
    if address is not None:
        return f"its host {host} is a loopback, private or link-local address" if _local(address) else None
    if host in _LOCAL_NAMES or host.endswith((".localhost", ".internal", ".local")):
        return f"its host {host} names this machine or its local network"
    for embedded in _EMBEDDED_IPV4.findall(host):
        address = _ip_address(embedded.replace("-", "."))
        if address is not None and _local(address):
            return f"its host {host} resolves to {address} through wildcard DNS"
    return None


_C0_OR_SPACE = "".join(map(chr, range(0x21)))
_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")


def _split(url: str) -> SplitResult:
    """`url` split as the WHATWG URL standard reads it (Node's `new URL`, the Claude CLI's WebFetch): C0 controls and
    spaces at either end and every tab or line break taken out, and in an http(s) URL each backslash read as a slash
    (round 30: `http://169.254.169.254\\@example.com/` is 169.254.169.254 to Node, and was example.com to urlsplit,
    which read `169.254.169.254\\` as a user name; `http://\\127.0.0.1/` named no host to it, 127.0.0.1 to Node)."""
    url = url.strip(_C0_OR_SPACE).translate(_TAB_OR_NEWLINE)
    if url[:6].lower().startswith(("http:", "https:")):
        url = url.replace("\\", "/")
    return urlsplit(url)


def _hosts(url: str) -> list[str]:
    """The hosts `url` names: as Node's parser reads it (`_split`) and as urlsplit reads it as written, one when they
    agree. Both are judged (fail closed): what fetches it is Node's, and a client that reads it the other way still
    finds the other (`http://evil.example\\@127.0.0.1/` is evil.example to Node, 127.0.0.1 to urlsplit)."""
    return list(dict.fromkeys((_host(_split(url)), _host(urlsplit(url.strip())))))


def _host(parts: SplitResult) -> str:
    """The host of `parts` as the URL parser reads it: percent-decoded, mapped as IDNA maps (UTS 46: `１２７。0.0.1`
    is 127.0.0.1, and the characters it ignores are taken out: round 30, `127.0.0.1\\u00ad` with a soft hyphen and
    `local\\u00adhost` were 127.0.0.1 and localhost to Node, names to this), lower-cased, without its trailing dot. A
    host IDNA refuses is read NFKC-normalized as before (Node refuses the URL: nothing is fetched)."""
    import idna  # httpx's own dependency; imported only where a fetch is judged

    host = unquote(parts.hostname or "")
    with contextlib.suppress(idna.IDNAError, ValueError):
        host = idna.uts46_remap(host, std3_rules=False, transitional=False)
    return unicodedata.normalize("NFKC", host).casefold().translate(_DOTS).rstrip(".")


_NOT_GLOBAL_V4 = (ipaddress.IPv4Network("192.0.0.0/24"),)
"""IPv4 blocks IANA lists as not globally reachable that Python's `is_global` (3.11) passes: 192.0.0.0/24 holds
Oracle Cloud's metadata service, 192.0.0.192 (round 29)."""

_EMBEDDING_V6 = (
    ipaddress.IPv6Network("64:ff9b::/96"),  # NAT64's well-known prefix: the IPv4 address in its last 32 bits
    ipaddress.IPv6Network("64:ff9b:1::/48"),  # NAT64's local-use prefix
    ipaddress.IPv6Network("::/96"),  # IPv4-compatible (deprecated): `::7f00:1`
    ipaddress.IPv6Network("::ffff:0:0:0/96"),  # IPv4-translated (SIIT)
)
"""IPv6 blocks whose last 32 bits are an IPv4 address the packet is translated to or tunnelled towards."""


def _local(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether a fetch of `address` may reach this machine, its network or its cloud's metadata service: it is not
    global, or it is one of `_NOT_GLOBAL_V4`, or it carries an IPv4 address that is (`_EMBEDDING_V6`, 6to4's
    `2002::/16`: round 29, `[64:ff9b::7f00:1]`, `[2002:7f00:1::]` and `[::7f00:1]` passed as global)."""
    if not address.is_global:
        return True
    if isinstance(address, ipaddress.IPv4Address):
        return any(address in network for network in _NOT_GLOBAL_V4)
    embedded = address.sixtofour
    if embedded is None and any(address in network for network in _EMBEDDING_V6):
        embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return embedded is not None and _local(embedded)


def _ip_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address `host` is, read as the WHATWG URL standard reads an IPv4 host (one to four parts, each decimal,
    `0x` hex or `0` octal, the last filling the bytes left), or an IPv6 one (an IPv4-mapped one as its IPv4
    address); None for a name."""
    if ":" in host:
        try:
            v6 = ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return None
        return v6.ipv4_mapped or v6
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers: list[int] = []
    for part in parts:
        base, digits = (16, part[2:]) if part[:2] in ("0x", "0X") else (8, part[1:]) if part[:1] == "0" else (10, part)
        if digits == "" and base != 10:
            numbers.append(0)
            continue
        try:
            numbers.append(int(digits, base))
        except ValueError:
            return None
    *first, last = numbers
    if any(n > 255 for n in first) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for at, number in enumerate(first):
        value += number << (8 * (3 - at))
    return ipaddress.IPv4Address(value)


RESOLVE_TIMEOUT_S = 3.0
"""How long a host name's lookup may take before the fetch is asked (`resolves_locally`)."""

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
"""The variables naming a proxy, in either case, as HTTP clients read them."""


async def _addresses(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to here (the one place a lookup is made: tests give their own answers)."""
    found = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(sockaddr[0]) for *_, sockaddr in found]


async def resolves_locally(url: str) -> str | None:
    """Why a fetch of `url` whose host is a public-looking name (`local_target` found none) may reach this machine or
    its network: the name resolves here to a loopback, private or link-local address (`attacker.example` with an A
    record of 169.254.169.254), or it cannot be resolved within `RESOLVE_TIMEOUT_S` and no proxy variable is set
    (then the fetch would resolve it on this machine too, and its answer is not known); None when every address is
    global. Through a proxy (`_proxied`: one for the URL's scheme, the host not exempted by `NO_PROXY`) the proxy
    resolves the name, so a failure here says nothing and is not asked. The fetch
    resolves the name again: a name whose answer changes between the two (DNS rebinding) is not caught here."""
    try:
        parts = _split(url)
        hosts, port = _hosts(url), parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "its host cannot be read"
    for host in hosts:
        if host and _ip_address(host) is None:  # an address is judged as written (`local_target`)
            reason = await _resolved_locally(host, port, _proxied(parts.scheme.lower(), host, port))
            if reason is not None:
                return reason
    return None


def _proxied(scheme: str, host: str, port: int) -> bool:
    """Whether a fetch of `host` (at `port`) by `scheme` goes through a proxy, which resolves the name on its own
    machine: a proxy variable for that scheme is set (`HTTPS_PROXY` for https, `HTTP_PROXY` for http: ALL_PROXY is
    not counted, as not every client reads it) and `NO_PROXY` does not exempt the host (round 32: with
    `NO_PROXY=.attacker.example`, or an `http://` URL and only `HTTPS_PROXY` set, the CLI resolves the name itself,
    and one that did not resolve here within the time ran unasked: a name server that answers late, then 127.0.0.1).
    Read as Python's urllib reads them (`*`, a suffix with or without its dot, an entry with the port:
    `NO_PROXY=slow.attacker.example:443`)."""
    import urllib.request  # only where a fetch is judged

    proxies = urllib.request.getproxies_environment()
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # in urllib since 3.x, not typeshed
    return bool(proxies.get(scheme)) and not bypass(f"{host}:{port}", proxies)


async def _resolved_locally(host: str, port: int, proxied: bool) -> str | None:
    """Why the name `host` resolves here to an address of this machine or its network, or cannot be resolved and the
    fetch is not `proxied` (`_proxied`), or None (`resolves_locally`)."""
    answers: list[str] | None = None
    with anyio.move_on_after(RESOLVE_TIMEOUT_S):
        try:
            answers = await _addresses(host, port)
        except (OSError, UnicodeError, ValueError):
            answers = []
    for answer in answers or ():
        address = _ip_address(answer.split("%", 1)[0])
        if address is None or _local(address):
            return f"its host {host} resolves to {answer}, a loopback, private or link-local address"
    if not answers and not proxied:
        return (
            f"its host {host} could not be resolved here within {RESOLVE_TIMEOUT_S:g} s, so where it leads is unknown"
        )
    return None
