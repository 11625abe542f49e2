from chaosdb.core.redact import MASK, redact, redact_dsn, secret_strings


def test_redact_url_dsn_password_and_query_password():
    assert redact_dsn("postgresql://app:s3cr3t@h1:5432,h2:5432/db?sslmode=disable") == \
        f"postgresql://app:{MASK}@h1:5432,h2:5432/db?sslmode=disable"
    assert redact_dsn("postgresql://app@h1/db?password=s3cr3t&x=1") == f"postgresql://app@h1/db?password={MASK}&x=1"
    assert "s3cr3t" not in redact_dsn("postgresql://app:s3cr3t@h1/db")


def test_redact_keyword_dsn():
    out = redact_dsn("host=h1 password='a b\\'c' user=app")
    assert "a b" not in out and "user=app" in out and "host=h1" in out
    assert redact_dsn("host=h1 password=xyz123") == f"host=h1 password={MASK}"


def test_redact_nested_values():
    value = {"a": ["token-123456 here", {"b": "no secret"}], "c": 5}
    assert redact(value, ["token-123456"]) == {"a": [f"{MASK} here", {"b": "no secret"}], "c": 5}
    # tiny secrets would mangle ordinary text and are ignored
    assert redact("abc", ["ab"]) == "abc"


def test_secret_strings_are_every_string_of_the_secrets_and_the_password_inside_a_dsn():
    found = secret_strings({"a": {"dsn": "postgresql://u:p%40ss-word@h/db?password=q-pass", "n": 5,
                                  "kv": "host=h password='x y\\'z' user=app"}, "b": ["token-1"]})
    assert {"postgresql://u:p%40ss-word@h/db?password=q-pass", "p%40ss-word", "p@ss-word", "q-pass", "x y'z",
            "token-1"} <= set(found)
    assert secret_strings({"a": {"plain": "no-dsn-here"}}) == ["no-dsn-here"]
