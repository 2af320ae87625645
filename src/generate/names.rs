//! Made-up people, organisations and domains (all under reserved
//! `example` names) for generated keyboxes.

use rand::seq::SliceRandom;
use rand::Rng;

const FIRST: [&str; 32] = [
    "Anna", "Ben", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiroshi", "Ines", "Jonas", "Kaja", "Luis", "Mira",
    "Nils", "Olga", "Pavel", "Quentin", "Rita", "Sven", "Tamar", "Ulrike", "Viktor", "Wen", "Ximena", "Yusuf", "Zoe",
    "Ahmed", "Bettina", "Carlos", "Dilara", "Emeka", "Fiona",
];
const LAST: [&str; 32] = [
    "Meyer",
    "Schmidt",
    "Rossi",
    "Novak",
    "Costa",
    "Larsen",
    "Weiss",
    "Tanaka",
    "Fischer",
    "Lange",
    "Okafor",
    "Singh",
    "Kowalski",
    "Dubois",
    "Haddad",
    "Moreau",
    "Yilmaz",
    "Kim",
    "Nakamura",
    "Petrov",
    "Silva",
    "Jensen",
    "Fontaine",
    "Berger",
    "Horvat",
    "Ivanova",
    "Lindqvist",
    "Mendes",
    "Nowak",
    "Ortega",
    "Popescu",
    "Quinn",
];
const DOMAINS: [&str; 10] = [
    "example.org",
    "example.com",
    "example.net",
    "mail.example",
    "uni-example.de",
    "corp.example.com",
    "lists.example.org",
    "posteo.example",
    "gmx.example",
    "bar.example",
];
const COMMENTS: [&str; 5] = ["work", "private", "code signing", "Debian", "release key"];

/// Certificate authorities: organisation and country.
pub(super) const ORGS: [(&str, &str); 10] = [
    ("Alpha Trust", "DE"),
    ("Beta PKI", "DE"),
    ("Gamma Certification", "AT"),
    ("Delta Secure", "CH"),
    ("Epsilon Sign", "FR"),
    ("Zeta Authority", "NL"),
    ("Eta Networks", "SE"),
    ("Theta Identity", "IT"),
    ("Iota Registry", "ES"),
    ("Kappa Trust Services", "BE"),
];

/// A person's display name and a mail address unique by `serial`.
pub(super) fn person(rng: &mut impl Rng, serial: usize) -> (String, String) {
    let first = FIRST.choose(rng).copied().unwrap_or("Anna");
    let last = LAST.choose(rng).copied().unwrap_or("Meyer");
    let domain = DOMAINS.choose(rng).copied().unwrap_or("example.org");
    let mail = format!("{}.{}{}@{}", first.to_lowercase(), last.to_lowercase(), 10000 + serial, domain);
    (format!("{first} {last}"), mail)
}

/// OpenPGP user ids for one person: the first is `Name <mail>`, others
/// add a comment or another address.
pub(super) fn user_ids(rng: &mut impl Rng, serial: usize, count: usize) -> Vec<String> {
    let (name, mail) = person(rng, serial);
    let (local, _) = mail.split_once('@').unwrap_or((&mail, ""));
    let mut out = vec![format!("{name} <{mail}>")];
    while out.len() < count {
        let domain = DOMAINS.choose(rng).copied().unwrap_or("example.net");
        let comment = COMMENTS.choose(rng).copied().unwrap_or("work");
        let uid = format!("{name} ({comment}) <{local}@{domain}>");
        if !out.contains(&uid) {
            out.push(uid);
        }
    }
    out
}
