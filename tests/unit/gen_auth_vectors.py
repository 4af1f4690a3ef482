#!/usr/bin/env python3
"""gen_auth_vectors.py - signatures for tests/unit/test_auth.c, computed
independently of tabled's C code with Python's hmac/hashlib/base64.

Every vector is a string-to-sign built here from doc/protocol.md, Authentication, signed with
HMAC-SHA256 under an account key. SAS vectors also carry the query string a
client would send (values percent-encoded with urllib.parse.quote).

  gen_auth_vectors.py                 print the generated C block
  gen_auth_vectors.py --update FILE   replace the block in FILE
  gen_auth_vectors.py --check FILE    exit 1 when FILE's block is stale

The signing examples of doc/protocol.md (Signing examples, Account SAS,
Table SAS) are asserted against the signatures printed there, so the
document and this script agree.
"""
import base64
import hashlib
import hmac
import sys
from urllib.parse import quote

ACCOUNT = "devstoreaccount1"
DEV_KEY = base64.b64decode(
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
KEY2 = bytes(range(64))          # the test's secondary key: bytes 0..63
DATE = "Mon, 03 Jun 2024 10:00:00 GMT"
SE = "2024-06-30T00:00:00Z"

BEGIN = "/* BEGIN GENERATED VECTORS (tests/unit/gen_auth_vectors.py) */"
END = "/* END GENERATED VECTORS */"


def sign(sts, key=DEV_KEY):
    return base64.b64encode(hmac.new(key, sts.encode("utf-8"), hashlib.sha256).digest()).decode()


def sharedkey_sts(verb, path, date=DATE, md5="", ctype="", comp=None, account=ACCOUNT):
    res = "/" + account + path + ("?comp=" + comp if comp is not None else "")
    return "\n".join([verb, md5, ctype, date, res])


def lite_sts(path, date=DATE, account=ACCOUNT):
    return date + "\n/" + account + path


def account_sas_sts(p):
    fields = [ACCOUNT, p.get("sp", ""), p.get("ss", ""), p.get("srt", ""), p.get("st", ""),
              p.get("se", ""), p.get("sip", ""), p.get("spr", ""), p["sv"]]
    if p["sv"] >= "2020-12-06":
        fields.append(p.get("ses", ""))
    return "".join(f + "\n" for f in fields)


def table_sas_sts(p, table):
    sv = p["sv"]
    canon = ("/table/" if sv >= "2015-02-21" else "/") + ACCOUNT + "/" + table.lower()
    fields = [p.get("sp", ""), p.get("st", ""), p.get("se", ""), canon, p.get("si", "")]
    if sv >= "2015-04-05":
        fields += [p.get("sip", ""), p.get("spr", "")]
    fields += [sv, p.get("spk", ""), p.get("srk", ""), p.get("epk", ""), p.get("erk", "")]
    return "\n".join(fields)


def query(p, sig):
    return "&".join(k + "=" + quote(v, safe="") for k, v in p.items()) + "&sig=" + quote(sig, safe="")


def vectors():
    out = []   # (name, sts, sig, query or None)

    def sk(name, sts, key=DEV_KEY):
        out.append((name, sts, sign(sts, key), None))

    # doc/protocol.md, Signing examples: its seven rows.
    sk("sk_ex1", sharedkey_sts("GET", "/devstoreaccount1/Tables"))
    sk("sk_ex2", sharedkey_sts("POST", "/devstoreaccount1/orders", ctype="application/json"))
    sk("sk_ex3", sharedkey_sts("GET", "/devstoreaccount1/orders", comp="acl"))
    sk("sk_ex4", sharedkey_sts("GET", "/devstoreaccount1/", comp="properties"))
    sk("sk_ex5", sharedkey_sts("GET", "/devstoreaccount1/orders(PartitionKey='p1',RowKey='r1')"))
    sk("sk_ex6", lite_sts("/devstoreaccount1/Tables"))
    sk("sk_ex7", sharedkey_sts("GET", "/Tables"))
    # Secondary key.
    sk("sk_ex1_key2", sharedkey_sts("GET", "/devstoreaccount1/Tables"), KEY2)
    sk("sk_lite_key2", lite_sts("/devstoreaccount1/Tables"), KEY2)
    # Every field filled, for one-byte mutations.
    sk("sk_merge", sharedkey_sts("MERGE", "/devstoreaccount1/orders(PartitionKey='p1',RowKey='r1')",
                                 md5="Q2hlY2sgSW50ZWdyaXR5IQ==", ctype="application/json"))
    # Clock skew: +-16 and +-14 minutes around 10:00:00.
    for name, t in (("sk_p16", "10:16:00"), ("sk_m16", "09:44:00"), ("sk_p14", "10:14:00"),
                    ("sk_m14", "09:46:00"), ("sk_p15", "10:15:00"), ("sk_m15", "09:45:00")):
        sk(name, sharedkey_sts("GET", "/devstoreaccount1/Tables",
                               date="Mon, 03 Jun 2024 " + t + " GMT"))
    # Single-digit day; no date at all.
    sk("sk_1digit", sharedkey_sts("GET", "/devstoreaccount1/Tables",
                                  date="Mon, 3 Jun 2024 10:00:00 GMT"))
    sk("sk_nodate", sharedkey_sts("GET", "/devstoreaccount1/Tables", date=""))
    # x-ms-date precedence: a client that signed the Date header instead.
    sk("sk_signed_date", sharedkey_sts("GET", "/devstoreaccount1/Tables",
                                       date="Mon, 03 Jun 2024 10:05:00 GMT"))
    # Secondary endpoint: primary account name (doc/protocol.md, SharedKey), -secondary name (Azurite).
    sk("sk_sec", sharedkey_sts("GET", "/devstoreaccount1-secondary/Tables"))
    sk("sk_sec_azurite", sharedkey_sts("GET", "/devstoreaccount1-secondary/Tables",
                                       account="devstoreaccount1-secondary"))
    # Signed with the normalised path, sent with %27 for the quotes.
    sk("sk_norm", sharedkey_sts("GET", "/devstoreaccount1/orders(PartitionKey='p%201',RowKey='r1')"))

    # Account SAS (doc/protocol.md, Account SAS).
    def acct(name, key=DEV_KEY, **kw):
        p = {"sv": "2019-02-02", "ss": "t", "srt": "sco", "sp": "rwdlau", "se": SE,
             "spr": "https,http"}
        p.update(kw)
        p = {k: v for k, v in p.items() if v is not None}
        sts = account_sas_sts(p)
        sig = sign(sts, key)
        out.append((name, sts, sig, query(p, sig)))

    acct("acct_ex1")
    acct("acct_ex2", sv="2021-06-08")
    acct("acct_ex1_key2", key=KEY2)
    acct("acct_ses", sv="2021-06-08", ses="scope1")
    acct("acct_nt", ss="bq")
    acct("acct_o", srt="o", sp="rwdlacu")
    acct("acct_r", sp="r")
    acct("acct_cl", srt="c", sp="l")
    acct("acct_c_r", srt="c", sp="r")
    acct("acct_s", srt="s", sp="rw")
    acct("acct_s_r", srt="s", sp="r")
    acct("acct_a", srt="o", sp="a")
    acct("acct_au", srt="o", sp="au")
    acct("acct_c_c", srt="c", sp="c")
    acct("acct_expired", se="2024-06-03T09:59:59Z")
    acct("acct_se_now", se="2024-06-03T10:00:00Z")
    acct("acct_future", st="2024-06-03T10:00:01Z")
    acct("acct_edge", st="2024-06-03T10:00:00Z", se="2024-06-03T10:00:01Z")
    acct("acct_https", spr="https")
    acct("acct_nospr", spr=None)
    acct("acct_sip1", sip="10.0.0.1")
    acct("acct_siprange", sip="10.0.0.1-10.0.0.255")
    acct("acct_sip6", sip="2001:db8::1-2001:db8::ff")
    acct("acct_sipbad", sip="not-an-ip")
    acct("acct_datefmt", st="2024-06-01", se="2024-06-30T00:00Z")
    acct("acct_frac", se="2024-06-30T00:00:00.0000000Z")
    acct("acct_sv2015", sv="2015-04-05")
    acct("acct_sv2014", sv="2014-02-14")
    acct("acct_badsp", sp="rz")
    acct("acct_nose", se=None)

    # Table SAS (doc/protocol.md, Table SAS).
    def tbl(name, key=DEV_KEY, table="orders", **kw):
        p = {"sv": "2019-02-02", "tn": table, "sp": "raud", "se": SE}
        p.update(kw)
        p = {k: v for k, v in p.items() if v is not None}
        sts = table_sas_sts(p, p.get("tn", table))
        sig = sign(sts, key)
        out.append((name, sts, sig, query(p, sig)))

    tbl("tbl_ex1", st="2024-06-01T00:00:00Z", spr="https,http")
    tbl("tbl_ex2", sp="r", spk="p1", epk="p1")
    tbl("tbl_ex1_key2", key=KEY2, st="2024-06-01T00:00:00Z", spr="https,http")
    tbl("tbl_upper", table="Orders")
    tbl("tbl_r", sp="r")
    tbl("tbl_a", sp="a")
    tbl("tbl_au", sp="au")
    tbl("tbl_d", sp="d")
    tbl("tbl_u", sp="u")
    tbl("tbl_range", spk="p1", srk="r1", epk="p5", erk="r5")
    tbl("tbl_range_start", spk="p3")
    tbl("tbl_si", sp=None, se=None, si="pol1")
    tbl("tbl_si_sp", sp="r", se=None, si="pol1")
    tbl("tbl_si_old", sp=None, se=None, si="polold")
    tbl("tbl_si_nope", sp=None, se=None, si="nope")
    tbl("tbl_si_expiry_only", sp="ra", se=None, si="polexp")
    tbl("tbl_sv20150221", sp="r", sv="2015-02-21", sip="1.2.3.4", spr="https")
    tbl("tbl_sv20130815", sp="r", sv="2013-08-15")
    tbl("tbl_https", spr="https")
    tbl("tbl_sip", sip="127.0.0.1")
    tbl("tbl_expired", se="2024-06-03T09:00:00Z")
    tbl("tbl_srk_only", srk="r1")
    tbl("tbl_keys_special", spk="O'Neil \"A\"", epk="r 1-\u00fc")
    # No tn: Azurite signs the addressed table; a table SAS without tn works
    # for that table.
    p = {"sv": "2019-02-02", "sp": "r", "se": SE}
    sts = table_sas_sts(p, "orders")
    sig = sign(sts)
    out.append(("tbl_notn", sts, sig, query(p, sig)))
    return out


DOC_SIGS = {
    "sk_ex1": "RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=",
    "sk_ex2": "vt/zfJC+Lx2PXZmY5izhSEbZmld5YtUapeUJvIIFMh8=",
    "sk_ex3": "5iHHiSq0KkMfzdnv1xDjNBtHlUb3uzOBHydmCPARS9E=",
    "sk_ex4": "5IlTzaEzgI/Maj7hz5DCnatE7nu6Jtaz8YqiZ/TBilA=",
    "sk_ex5": "3PiobECKcvGC4xMwUeq00nG4P+eVvY6DED4RY06JKGA=",
    "sk_ex6": "VEDP5inHnQM+H3vm3WOQbXkoXPfrQQxQhZTnu21NQGA=",
    "sk_ex7": "pw2syiP4AiFUxlzgLqcyKOHjM5CkunuRcZuqYLF6UgY=",
    "acct_ex1": "zZkvQxHWbHGHXRDThQQDBpm6i3XCS9TBIZeuAfd38ms=",
    "acct_ex2": "6n6i+WzMXaKZxl18bKSE+IQl0oGHxdJVkXOemoGAurA=",
    "tbl_ex1": "Y9/tQllFNTtwkBUUZIpTyJWCQZIS2N+EKyRUZ0YKSlE=",
    "tbl_ex2": "Y8uZu1iFNOIUlhGuWgPRZEwtH/0NLB/gRR/ln+kNzpw=",
}


def c_string(s):
    if s is None:
        return "NULL"
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c == "\\":
            out.append("\\\\")
        elif c == '"':
            out.append('\\"')
        elif c == "\n":
            out.append("\\n")
        elif 32 <= b < 127 and c != "?":
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return '"' + "".join(out) + '"'


def block():
    vs = vectors()
    for name, sts, sig, _ in vs:
        if name in DOC_SIGS and DOC_SIGS[name] != sig:
            sys.exit("signing example mismatch for %s: %s != %s" % (name, sig, DOC_SIGS[name]))
    assert vs[0][1] == "GET\n\n\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables"
    lines = [BEGIN, "static const struct vec vectors[] = {"]
    for name, sts, sig, q in vs:
        lines.append("    {%s,\n     %s,\n     %s,\n     %s}," % (c_string(name), c_string(sts),
                                                                 c_string(sig), c_string(q)))
    lines.append("};")
    lines.append(END)
    return "\n".join(lines) + "\n"


def splice(text, new):
    a = text.index(BEGIN)
    b = text.index(END) + len(END) + 1
    return text[:a] + new + text[b:]


def main(argv):
    new = block()
    if len(argv) == 3 and argv[1] in ("--update", "--check"):
        with open(argv[2], encoding="utf-8") as f:
            text = f.read()
        updated = splice(text, new)
        if argv[1] == "--check":
            if updated != text:
                print("%s: generated vectors are stale" % argv[2])
                return 1
            return 0
        with open(argv[2], "w", encoding="utf-8") as f:
            f.write(updated)
        return 0
    sys.stdout.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
