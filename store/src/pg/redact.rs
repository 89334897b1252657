//! Passwords hidden from PostgreSQL connection strings before they reach a message.

/// `url` with every password replaced by `***`, for logs and error messages.
///
/// It reads `url` as `postgres::Config` does. A URL (`scheme://…`): the user info runs to
/// the first `@`, whatever comes before it (`/`, `?` and `:` included), and its password
/// from its first `:`; a query parameter's value runs to the next `&`, and its name is
/// percent-decoded. Anything else is read as `key=value` pairs: spaces around `=`, values
/// in single quotes, backslash escapes. It errs towards hiding more: a raw `@` in a
/// password (the parser would stop at it, and fail to connect) hides everything up to the
/// last `@` before the query; any parameter whose name holds `password`, in any case, is
/// hidden; the rest of a `key=value` string the parser would reject is hidden when it
/// mentions a password.
pub(crate) fn redact_url(url: &str) -> String {
    match url_scheme_len(url) {
        Some(len) => redact_url_form(url, len),
        None => redact_key_value(url),
    }
}

/// The length of `s`'s `scheme://` prefix, when it has one.
fn url_scheme_len(s: &str) -> Option<usize> {
    let (scheme, _) = s.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let scheme_chars = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (first.is_ascii_alphabetic() && scheme_chars).then_some(scheme.len() + "://".len())
}

/// [`redact_url`] of a URL whose `scheme://` is `url[..start]`.
fn redact_url_form(url: &str, start: usize) -> String {
    let (scheme, rest) = url.split_at(start);
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    let mut tail = rest;
    if let Some(first_at) = rest.find('@') {
        // The parser's user info ends at the first '@'. Host names hold no '@', so more of
        // them before the query's first `name=` mean a password with a raw '@': the user
        // info ends at the last one.
        let after = &rest[first_at + 1..];
        let before_query = &after[..after.find('=').unwrap_or(after.len())];
        let userinfo_end = before_query
            .rfind('@')
            .map_or(first_at, |at| first_at + 1 + at);
        if let Some(colon) = rest[..userinfo_end].find(':') {
            out.push_str(&rest[..=colon]);
            out.push_str("***");
            tail = &rest[userinfo_end..];
        }
    }
    out.push_str(&redact_query(tail));
    out
}

/// `s` (a URL after its user info) with the value of every parameter named like a password
/// hidden: a parameter starts `s` or follows a `?` or `&`, and its value runs to the next
/// `&`, as the parser reads it.
fn redact_query(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        let name_len = rest.find(['=', '&', '?']).unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_len);
        if let Some(value) = after.strip_prefix('=')
            && names_password(&percent_decode(name))
        {
            out.push_str(name);
            out.push_str("=***");
            rest = &value[value.find('&').unwrap_or(value.len())..];
        }
        match rest.find(['&', '?']) {
            Some(at) => {
                out.push_str(&rest[..=at]);
                rest = &rest[at + 1..];
            }
            None => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// `s` with `%XX` escapes decoded (other bytes as they are; invalid UTF-8 replaced).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| Some((hex_digit(hex[0])? << 4) | hex_digit(hex[1])?));
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                i += 3;
            }
            None => {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

fn hex_digit(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Whether a parameter's name may carry a password (`password`, in any case).
fn names_password(name: &str) -> bool {
    name.to_ascii_lowercase().contains("password")
}

/// [`redact_url`] of a `key=value` connection string, read as the parser reads it.
fn redact_key_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        let key_start = rest.len() - rest.trim_start().len();
        let key_len = rest[key_start..]
            .find(|c: char| c.is_whitespace() || c == '=')
            .unwrap_or(rest.len() - key_start);
        if key_len == 0 {
            // Only whitespace left, or a '=' with no key: the parser ends or fails here.
            if !names_password(rest) {
                out.push_str(rest);
            } else {
                out.push_str(&rest[..key_start]);
                out.push_str("***");
            }
            return out;
        }
        let key_end = key_start + key_len;
        let secret = names_password(&rest[key_start..key_end]);
        let Some(after_eq) = rest[key_end..].trim_start().strip_prefix('=') else {
            // No '=' after the key: the parser fails here. Keep what cannot be a password.
            out.push_str(&rest[..key_end]);
            let after = &rest[key_end..];
            if secret || names_password(after) {
                if !after.trim().is_empty() {
                    out.push_str(" ***");
                }
            } else {
                out.push_str(after);
            }
            return out;
        };
        let value = after_eq.trim_start();
        let value_start = rest.len() - value.len();
        let value_len = key_value_len(value);
        out.push_str(&rest[..value_start]);
        out.push_str(if secret { "***" } else { &value[..value_len] });
        rest = &value[value_len..];
    }
}

/// The length of the value `s` starts with, in a `key=value` string: up to the closing
/// quote of a quoted value (the end of `s` when it has none), else up to whitespace; a
/// backslash escapes the character after it.
fn key_value_len(s: &str) -> usize {
    let quoted = s.starts_with('\'');
    let mut chars = s.char_indices().skip(usize::from(quoted));
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '\'' if quoted => return at + 1,
            c if !quoted && c.is_whitespace() => return at,
            _ => {}
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn redact_url_hides_every_password() {
        assert_eq!(
            redact_url("postgres://mmo:s3cret@db.local:5432/game"),
            "postgres://mmo:***@db.local:5432/game"
        );
        assert_eq!(
            redact_url("postgresql://mmo@db/game?password=s3cret&sslmode=disable"),
            "postgresql://mmo@db/game?password=***&sslmode=disable"
        );
        assert_eq!(
            redact_url("postgres://a:b@h/d?PASSWORD=x"),
            "postgres://a:***@h/d?PASSWORD=***"
        );
        assert_eq!(
            redact_url("postgres://mmo@db/game"),
            "postgres://mmo@db/game"
        );
        assert_eq!(
            redact_url("host=db password=x user=y"),
            "host=db password=*** user=y"
        );
    }

    /// The password `postgres::Config` reads from `url`, which must parse.
    fn parsed_password(url: &str) -> String {
        let config: postgres::Config = url.parse().unwrap_or_else(|err| panic!("{url}: {err}"));
        let password = config
            .get_password()
            .unwrap_or_else(|| panic!("{url}: no password"));
        String::from_utf8(password.to_vec()).unwrap()
    }

    /// Passwords holding the characters that end a URL's authority or user info: the parser
    /// takes the user info up to the first '@', so '/', '?' and ':' are part of the password,
    /// and redaction hides all of it.
    #[test]
    fn redact_url_hides_passwords_holding_url_delimiters() {
        let cases = [
            ("postgres://mmo:s3cr/et@db/game", "s3cr/et"),
            ("postgres://mmo:s3c?ret@db:5432/game", "s3c?ret"),
            ("postgresql://mmo:s3:cr:et@db:5432/game", "s3:cr:et"),
            (
                "postgres://mmo:a/b?c:d&e=f@db/game?sslmode=disable",
                "a/b?c:d&e=f",
            ),
            ("postgres://mmo:s3c%40ret@db/game", "s3c@ret"),
            (
                "postgres://mmo:s3cr/et@/game?host=/run/postgresql",
                "s3cr/et",
            ),
        ];
        for (url, password) in cases {
            assert_eq!(parsed_password(url), password, "{url}");
            let redacted = redact_url(url);
            assert!(!redacted.contains(password), "{url} -> {redacted}");
            assert!(redacted.starts_with("postgres") && redacted.contains("mmo:***@"));
        }
        assert_eq!(
            redact_url("postgres://mmo:s3cr/et@db/game"),
            "postgres://mmo:***@db/game"
        );
        assert_eq!(
            redact_url("postgres://mmo:s3c?ret@db:5432/game"),
            "postgres://mmo:***@db:5432/game"
        );
        assert_eq!(
            redact_url("postgres://mmo:a/b?c:d&e=f@db/game?sslmode=disable"),
            "postgres://mmo:***@db/game?sslmode=disable"
        );
        // A raw '@': the parser stops at the first one (and the login fails); nothing of what
        // was meant as the password shows.
        assert_eq!(
            redact_url("postgres://mmo:s3c@r@et@db/game?application_name=me@home"),
            "postgres://mmo:***@db/game?application_name=me@home"
        );
        assert_eq!(
            redact_url("postgres://me@corp:s3cret@db/game"),
            "postgres://me@corp:***@db/game"
        );
        // Not a postgres:// URL (refused by StoreSpec, and echoed in its error): the same.
        assert_eq!(
            redact_url("mysql://mmo:s3cr/et@db/game"),
            "mysql://mmo:***@db/game"
        );
    }

    #[test]
    fn redact_url_leaves_urls_without_a_password_alone() {
        for url in [
            "postgres://mmo@db/game",
            "postgres://db:5432/game?sslmode=disable&application_name=a:b",
            "postgresql:///game?host=/run/postgresql&user=mmo",
            "postgres://mmo@db:5432",
            "postgres://",
        ] {
            let config: postgres::Config = url.parse().unwrap();
            assert!(config.get_password().is_none(), "{url}");
            assert_eq!(redact_url(url), url);
        }
    }

    /// A password query parameter's value runs to the next '&' ('?' and spaces included),
    /// and its name may be percent-encoded.
    #[test]
    fn redact_url_hides_password_parameters_as_the_parser_reads_them() {
        let cases = [
            (
                "postgres://mmo@db/game?password=s3c?r et&sslmode=disable",
                "s3c?r et",
                "postgres://mmo@db/game?password=***&sslmode=disable",
            ),
            (
                "postgres://mmo@db/game?sslmode=disable&pass%77ord=s3c/ret",
                "s3c/ret",
                "postgres://mmo@db/game?sslmode=disable&pass%77ord=***",
            ),
            (
                "postgres://mmo:one@db/game?password=two",
                "two",
                "postgres://mmo:***@db/game?password=***",
            ),
        ];
        for (url, password, redacted) in cases {
            assert_eq!(parsed_password(url), password, "{url}");
            assert_eq!(redact_url(url), redacted);
        }
    }

    /// `key=value` strings: spaces around '=', quoted values, backslash escapes.
    #[test]
    fn redact_url_hides_key_value_passwords() {
        let cases = [
            (
                "host=db password=s3cret user=mmo",
                "s3cret",
                "host=db password=*** user=mmo",
            ),
            (
                "host=db password = 's3 cr\\'et' user=mmo",
                "s3 cr'et",
                "host=db password = *** user=mmo",
            ),
            (
                "password=s3\\ cret dbname=game",
                "s3 cret",
                "password=*** dbname=game",
            ),
            (
                "user=mmo\tpassword=s3cr/et@x",
                "s3cr/et@x",
                "user=mmo\tpassword=***",
            ),
        ];
        for (conninfo, password, redacted) in cases {
            assert_eq!(parsed_password(conninfo), password, "{conninfo}");
            assert_eq!(redact_url(conninfo), redacted);
            for part in password.split(' ') {
                assert!(!redact_url(conninfo).contains(part), "{conninfo}");
            }
        }
        // What the parser refuses keeps no word that may be the password.
        assert_eq!(
            redact_url("host=db password 's3 cret'"),
            "host=db password ***"
        );
        assert_eq!(redact_url("host db password=s3cret"), "host ***");
        assert_eq!(redact_url("password='s3 cret"), "password=***");
        assert_eq!(redact_url("host=db port"), "host=db port");
    }
}
