//! The `ddl` option: tokens, bit values, text round trips.

use ddl_filter::{DdlKind, DdlKinds, ErrorKind};

const TOKENS: [&str; 12] = [
    "table",
    "index",
    "sequence",
    "trigger",
    "view",
    "rule",
    "schema",
    "function",
    "type",
    "domain",
    "extension",
    "foreign",
];

#[test]
fn bit_values_are_the_stored_format() {
    // The catalog stores these integers: they must never change.
    let flags = [
        DdlKinds::TABLE,
        DdlKinds::INDEX,
        DdlKinds::SEQUENCE,
        DdlKinds::TRIGGER,
        DdlKinds::VIEW,
        DdlKinds::RULE,
        DdlKinds::SCHEMA,
        DdlKinds::FUNCTION,
        DdlKinds::TYPE,
        DdlKinds::DOMAIN,
        DdlKinds::EXTENSION,
        DdlKinds::FOREIGN,
    ];
    for (bit, ((flag, token), kind)) in flags.iter().zip(TOKENS).zip(DdlKind::ALL).enumerate() {
        assert_eq!(flag.bits(), 1 << bit, "{token}");
        assert_eq!(kind.token(), token);
        assert_eq!(kind.kinds(), *flag);
        assert_eq!(DdlKinds::from(*kind), *flag);
        assert_eq!(flag.token(), Some(token));
        assert_eq!(token.parse::<DdlKinds>().ok(), Some(*flag));
    }
    assert_eq!(DdlKind::ALL.len(), 12);
    assert_eq!(DdlKinds::all().bits(), 0xfff);
    assert_eq!(DdlKinds::EXTENSION.bits(), 1024);
    assert_eq!(DdlKinds::FOREIGN.bits(), 2048);
    // What `all` names: the eleven kinds it always named, not the opt-in `foreign`.
    assert_eq!(DdlKinds::ALL.bits(), 0x7ff);
    assert_eq!(DdlKinds::OPT_IN, DdlKinds::FOREIGN);
}

#[test]
fn parses_option_text() {
    let parse = |text: &str| DdlKinds::parse(text).map_err(|e| e.to_string());
    assert_eq!(parse("table, index"), Ok(DdlKinds::TABLE | DdlKinds::INDEX));
    assert_eq!(
        parse(" Index ,TABLE\t"),
        Ok(DdlKinds::TABLE | DdlKinds::INDEX)
    );
    assert_eq!(parse("table,table"), Ok(DdlKinds::TABLE));
    assert_eq!(parse("ALL"), Ok(DdlKinds::ALL));
    assert_eq!(parse("all, view"), Ok(DdlKinds::ALL));
    assert_eq!(parse("all, foreign"), Ok(DdlKinds::all()));
    assert_eq!(parse("foreign, ALL"), Ok(DdlKinds::all()));
    assert_eq!(parse("foreign"), Ok(DdlKinds::FOREIGN));
    assert_eq!(parse("none"), Ok(DdlKinds::empty()));
    assert_eq!(parse(" NONE "), Ok(DdlKinds::empty()));
    assert_eq!(
        parse("function,type,domain,extension,rule,schema"),
        Ok(DdlKinds::FUNCTION
            | DdlKinds::TYPE
            | DdlKinds::DOMAIN
            | DdlKinds::EXTENSION
            | DdlKinds::RULE
            | DdlKinds::SCHEMA)
    );
}

#[test]
fn unknown_and_empty_tokens_are_named() {
    let valid = "(valid: table, index, sequence, trigger, view, rule, schema, function, type, \
                 domain, extension, foreign, all, none)";
    for (text, token) in [
        ("tabel", "tabel"),
        ("table,,index", ""),
        ("table, index,", ""),
        ("", ""),
        ("  ", ""),
        ("table, ta ble", "ta ble"),
        ("tables", "tables"),
        ("table;index", "table;index"),
    ] {
        let error = DdlKinds::parse(text).err();
        assert_eq!(
            error.as_ref().map(|e| e.kind()),
            Some(&ErrorKind::UnknownKind(token.to_owned())),
            "{text:?}"
        );
        assert_eq!(
            error.map(|e| e.to_string()),
            Some(format!("unknown ddl kind {token:?} {valid}")),
            "{text:?}"
        );
    }
}

#[test]
fn none_stands_alone() {
    for text in ["none, table", "table,none", "none,none", "all, none"] {
        assert_eq!(
            DdlKinds::parse(text).err().map(|e| e.kind().clone()),
            Some(ErrorKind::NoneWithOtherKinds),
            "{text}"
        );
    }
}

#[test]
fn canonical_text() {
    assert_eq!(DdlKinds::empty().to_string(), "none");
    assert_eq!(DdlKinds::ALL.to_string(), "all");
    assert_eq!(DdlKinds::all().to_string(), "all, foreign");
    assert_eq!(
        (DdlKinds::TABLE | DdlKinds::FOREIGN).to_string(),
        "table, foreign"
    );
    assert_eq!(
        (DdlKinds::INDEX | DdlKinds::TABLE).to_string(),
        "table, index"
    );
    assert_eq!(
        (DdlKinds::ALL - DdlKinds::TABLE).to_string(),
        "index, sequence, trigger, view, rule, schema, function, type, domain, extension"
    );
    // Bits outside the kinds are not written (only from_bits_retain can set them).
    assert_eq!(DdlKinds::from_bits_retain(1 << 12).to_string(), "none");
    assert_eq!(DdlKinds::from_bits_retain(-1).to_string(), "all, foreign");
}

#[test]
fn every_mask_round_trips_through_text_and_integer() {
    for bits in 0..=0xfff {
        let kinds = DdlKinds::from_bits(bits).unwrap_or_else(|| panic!("{bits:#x}"));
        assert_eq!(kinds.bits(), bits);
        assert_eq!(DdlKinds::try_from(bits).ok(), Some(kinds));
        let text = kinds.to_string();
        assert_eq!(DdlKinds::parse(&text).ok(), Some(kinds), "{text}");
        assert_eq!(
            DdlKinds::parse(&text.to_uppercase()).ok(),
            Some(kinds),
            "{text}"
        );
        let listed: Vec<DdlKind> = kinds.kinds().collect();
        assert_eq!(listed.len(), bits.count_ones() as usize);
        assert_eq!(kinds.token().is_some(), listed.len() == 1);
    }
}

#[test]
fn masks_with_unknown_bits_are_refused() {
    for bits in [0x1000, 0xfff | 0x1000, -1, i32::MIN, i32::MAX] {
        assert_eq!(DdlKinds::from_bits(bits), None, "{bits:#x}");
        let error = DdlKinds::try_from(bits).err();
        assert_eq!(
            error.as_ref().map(|e| e.kind()),
            Some(&ErrorKind::UnknownBits(bits))
        );
        assert_eq!(
            error.map(|e| e.to_string()),
            Some(format!(
                "ddl kind mask {bits:#x} has bits outside the known kinds (0xfff)"
            ))
        );
    }
}
