//! What gpg removes from a keyblock it imports before storing it: its
//! checks of the key's own signatures and of the parts they bind
//! (`chk_self_sigs` and `delete_inv_parts` in GnuPG 2.2's and 2.4's
//! `g10/import.c`; facts only, no code). Every self-signature is taken as
//! valid, as the blobs the replay writes take them; the rules that need no
//! verification are gpg's:
//!
//! * **Subkey bindings and revocations**: of a subkey's binding signatures
//!   (class 0x18) made by the primary key only the newest stays (of equal
//!   times the later one), and so of its revocations (0x28); a binding or
//!   revocation signature of any signer before the first subkey goes.
//! * **Unbound parts**: a subkey without a binding self-signature goes
//!   with its signatures, and so does a user id or attribute without a
//!   self-signature (a certification 0x10–0x13 or a revocation 0x30).
//! * **Misplaced or foreign signatures**: a key revocation (0x20) after a
//!   user id, a signature marked not exportable, and one of a class that
//!   certifies nothing (gpg 2.4 also counts attestations, 0x16, as
//!   certifications; 2.2 does not).
//!
//! Not modelled: self-signatures that do not verify (gpg deletes them, and
//! what they alone bind), and signatures by algorithms gpg does not know.

use super::incoming::IncomingKey;
use super::raw::SigPacket;
use crate::gnupg_version::GnupgVersion;
use crate::kbx::keyblock::tag;

/// What gpg keeps of one signature, read once.
struct Sig {
    class: Option<u8>,
    created: u32,
    own: bool,
    exportable: bool,
}

impl Sig {
    fn read(body: &[u8], own: [u8; 8]) -> Self {
        match SigPacket::parse(body) {
            Ok(s) => Self {
                class: Some(s.class),
                created: s.created.unwrap_or(0),
                own: s.issuer == Some(own),
                exportable: s.exportable,
            },
            // gpg does not import a signature it cannot parse either; the
            // replay keeps it where it is (it never came to this point).
            Err(_) => Self { class: None, created: 0, own: false, exportable: true },
        }
    }
}

/// Whether gpg `version` counts signature class `c` as a certification.
fn certifies(c: u8, version: GnupgVersion) -> bool {
    matches!(c, 0x10..=0x13 | 0x18 | 0x1F | 0x20 | 0x28 | 0x30) || (c == 0x16 && version == GnupgVersion::V2_4)
}

/// Remove from `key` what `version`'s gpg removes before storing it (see
/// the module docs). Whether a user id or attribute is left (else gpg
/// says "no valid user IDs" and imports nothing).
pub fn clean(key: &mut IncomingKey, version: GnupgVersion) -> bool {
    let own = key.key_id;
    let mut uid_seen = false;
    key.components.retain_mut(|c| {
        if matches!(c.tag, tag::USER_ID | tag::USER_ATTRIBUTE) {
            uid_seen = true;
        }
        let sigs: Vec<Sig> = c.sigs.iter().map(|s| Sig::read(s, own)).collect();
        let mut keep = vec![true; sigs.len()];
        match c.tag {
            tag::PUBLIC_SUBKEY => {
                // The newest binding and the newest revocation by the key
                // itself; older ones go.
                for class in [0x18, 0x28] {
                    let by_key = || (0..sigs.len()).filter(|&i| sigs[i].own && sigs[i].class == Some(class));
                    // Of equal times the later one (`max_by_key` takes the last).
                    if let Some(newest) = by_key().max_by_key(|&i| sigs[i].created) {
                        by_key().filter(|&i| i != newest).for_each(|i| keep[i] = false);
                    }
                }
                if !sigs.iter().any(|s| s.own && s.class == Some(0x18)) {
                    return false;
                }
            }
            tag::USER_ID | tag::USER_ATTRIBUTE
                if !sigs.iter().any(|s| s.own && matches!(s.class, Some(0x10..=0x13 | 0x30))) =>
            {
                return false;
            }
            _ => {}
        }
        let subkey = c.tag == tag::PUBLIC_SUBKEY;
        for (k, s) in keep.iter_mut().zip(&sigs) {
            let Some(class) = s.class else { continue };
            let gone = !s.exportable
                || (class == 0x20 && uid_seen)
                || (matches!(class, 0x18 | 0x28) && !subkey)
                || !certifies(class, version);
            if gone {
                *k = false;
            }
        }
        let mut kept = keep.into_iter();
        c.sigs.retain(|_| kept.next().unwrap_or(true));
        true
    });
    key.first_user_id().is_some() || key.components.iter().any(|c| c.tag == tag::USER_ATTRIBUTE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openpgp::incoming::Component;

    const OWN: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];
    const OTHER: [u8; 8] = [9; 8];

    /// A v4 signature body: `class` by `issuer` made at `at`, exportable
    /// or not.
    fn sig(class: u8, issuer: [u8; 8], at: u32, exportable: bool) -> Vec<u8> {
        let mut hashed = vec![5, 2];
        hashed.extend(at.to_be_bytes());
        if !exportable {
            hashed.extend([2, 4, 0]);
        }
        let mut b = vec![4, class, 1, 8];
        b.extend((hashed.len() as u16).to_be_bytes());
        b.extend(hashed);
        b.extend(10u16.to_be_bytes());
        b.extend([9, 16]);
        b.extend(issuer);
        b.extend([0, 0, 0, 8, 0xff]);
        b
    }

    fn part(tag: u8, body: &[u8], sigs: Vec<Vec<u8>>) -> Component {
        Component { tag, body: body.to_vec(), sigs }
    }

    fn key(components: Vec<Component>) -> IncomingKey {
        IncomingKey { offset: 0, components, fingerprint: vec![0; 20], key_id: OWN }
    }

    #[test]
    fn only_the_newest_subkey_binding_and_revocation_stay() {
        let (b1, b2) = (sig(0x18, OWN, 100, true), sig(0x18, OWN, 300, true));
        // As new as b2, told apart by its hash algorithm.
        let mut b3 = sig(0x18, OWN, 300, true);
        b3[3] = 10;
        let (r1, r2) = (sig(0x28, OWN, 500, true), sig(0x28, OWN, 400, true));
        let foreign = sig(0x18, OTHER, 900, true);
        let mut k = key(vec![
            part(tag::PUBLIC_KEY, b"k", vec![]),
            part(tag::USER_ID, b"u", vec![sig(0x13, OWN, 50, true)]),
            part(tag::PUBLIC_SUBKEY, b"s", vec![b1, b2, foreign.clone(), b3.clone(), r1.clone(), r2]),
        ]);
        assert!(clean(&mut k, GnupgVersion::V2_2));
        assert_eq!(k.components[2].sigs, vec![foreign, b3, r1], "of equal times the later binding");
    }

    #[test]
    fn unbound_parts_and_misplaced_signatures_go() {
        let cert = sig(0x10, OTHER, 10, true);
        let mut k = key(vec![
            part(tag::PUBLIC_KEY, b"k", vec![sig(0x20, OWN, 1, true), sig(0x18, OWN, 2, true)]),
            part(tag::USER_ID, b"unsigned", vec![cert.clone()]),
            part(
                tag::USER_ID,
                b"signed",
                vec![
                    sig(0x13, OWN, 3, true),
                    sig(0x20, OWN, 4, true),
                    sig(0x10, OTHER, 5, false),
                    sig(0x00, OTHER, 6, true),
                    cert.clone(),
                ],
            ),
            part(tag::PUBLIC_SUBKEY, b"unbound", vec![sig(0x28, OWN, 7, true)]),
        ]);
        assert!(clean(&mut k, GnupgVersion::V2_2));
        let tags: Vec<&[u8]> = k.components.iter().map(|c| c.body.as_slice()).collect();
        assert_eq!(tags, [&b"k"[..], b"signed"], "the unsigned user id and the unbound subkey go");
        assert_eq!(k.components[0].sigs, vec![sig(0x20, OWN, 1, true)], "no binding before a subkey");
        assert_eq!(
            k.components[1].sigs,
            vec![sig(0x13, OWN, 3, true), cert],
            "no late revocation, local or data signature"
        );
    }

    #[test]
    fn attestations_are_certifications_from_2_4_on() {
        let att = sig(0x16, OWN, 9, true);
        let uid = || part(tag::USER_ID, b"u", vec![sig(0x13, OWN, 3, true), att.clone()]);
        let mut old = key(vec![part(tag::PUBLIC_KEY, b"k", vec![]), uid()]);
        let mut new = old.clone();
        assert!(clean(&mut old, GnupgVersion::V2_2) && clean(&mut new, GnupgVersion::V2_4));
        assert_eq!((old.components[1].sigs.len(), new.components[1].sigs.len()), (1, 2));
    }

    #[test]
    fn no_user_id_left_is_said() {
        let mut k =
            key(vec![part(tag::PUBLIC_KEY, b"k", vec![]), part(tag::USER_ID, b"u", vec![sig(0x10, OTHER, 1, true)])]);
        assert!(!clean(&mut k, GnupgVersion::V2_4));
    }
}
