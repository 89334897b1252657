//! Parsing and printing store specifications.

use store::{StoreError, StoreSpec};

#[test]
fn postgres_urls_parse_and_everything_else_is_refused() {
    for url in [
        "postgres://mmo@127.0.0.1:5432/game",
        "postgresql://mmo:pw@db.local/game?connect_timeout=3",
    ] {
        assert_eq!(
            url.parse::<StoreSpec>().unwrap(),
            StoreSpec::Postgres { url: url.into() }
        );
    }
    for bad in [
        "",
        "data",
        "./data",
        "mysql://a@b/c",
        "sqlite:///tmp/x",
        "POSTGRES",
    ] {
        assert!(
            matches!(bad.parse::<StoreSpec>(), Err(StoreError::Spec { .. })),
            "{bad:?} parsed"
        );
    }
}

#[test]
fn no_message_shows_a_password() {
    let err = "mysql://mmo:hunter2@db/game"
        .parse::<StoreSpec>()
        .unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
    let err = "postgres://mmo:hunter2@db:notaport/game"
        .parse::<StoreSpec>()
        .unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
    let spec: StoreSpec = "postgres://mmo:hunter2@db/game".parse().unwrap();
    assert_eq!(spec.to_string(), "PostgreSQL at postgres://mmo:***@db/game");
}
