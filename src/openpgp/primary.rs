//! The user id gpg takes as a key's primary one (`merge_selfsigs`), which
//! every listing of gpg's (`gpg -k`, `--list-sigs`, `--check-sigs`) moves
//! to the front of the user ids (`reorder_keyblock`); GnuPG 2.2 and 2.4
//! choose it the same way.
//!
//! Among the user ids before the first subkey, each one's newest
//! self-signature counts (a certification by the key itself, classes
//! 0x10–0x13), unless the key revoked the user id (class 0x30) no earlier
//! than that. Of those whose newest self-signature says "primary user id",
//! the newest wins; if none says so, the user id with the newest
//! self-signature. Ties go to the one that sorts last (length, then bytes).

use pgp::packet::Signature;

use super::issuer::issuer_key_id;

/// The index (among `users`) of the primary user id of the key whose key
/// id is `own`; `users` are the user ids before the first subkey, each
/// with its signatures. `None` when no user id has a self-signature.
pub(super) fn primary_user<'a, S>(own: [u8; 8], users: impl IntoIterator<Item = (&'a [u8], S)>) -> Option<usize>
where
    S: IntoIterator<Item = &'a Signature> + Clone,
{
    let newest = |sigs: S, class: &dyn Fn(u8) -> bool| {
        sigs.into_iter()
            .filter(|s| s.typ().map(u8::from).is_some_and(class) && issuer_key_id(s) == Some(own))
            .map(|s| (s.created().map_or(0, |t| t.as_secs()), s.is_primary()))
            .max_by_key(|s| s.0)
    };
    // (created, primary flag, uid, index) of each user id that counts.
    let mut uids: Vec<(u32, bool, &[u8], usize)> = Vec::new();
    for (i, (id, sigs)) in users.into_iter().enumerate() {
        let Some((created, primary)) = newest(sigs.clone(), &|c| matches!(c, 0x10..=0x13)) else { continue };
        let revoked = newest(sigs, &|c| c == 0x30).is_some_and(|r| r.0 >= created);
        if created != 0 && !revoked {
            uids.push((created, primary, id, i));
        }
    }
    let sorts_after = |a: &[u8], b: &[u8]| (a.len(), a) > (b.len(), b);
    let pick = |flagged: bool| {
        let mut best: Option<(u32, &[u8], usize)> = None;
        for &(created, primary, id, i) in &uids {
            if primary != flagged {
                continue;
            }
            match best {
                Some((c, b, _)) if created < c || (created == c && !sorts_after(id, b)) => {}
                _ => best = Some((created, id, i)),
            }
        }
        best.map(|b| b.2)
    };
    pick(true).or_else(|| pick(false))
}

/// `items` with the one at `first` moved to the front, the others in
/// their order (gpg's `reorder_keyblock`).
pub(super) fn to_front<T>(items: &mut [T], first: Option<usize>) {
    if let Some(i) = first.filter(|&i| i < items.len()) {
        items[..=i].rotate_right(1);
    }
}

#[cfg(test)]
mod tests {
    use super::to_front;

    #[test]
    fn the_primary_moves_to_the_front_and_the_rest_keep_their_order() {
        let mut v = vec!["a", "b", "c", "d"];
        to_front(&mut v, Some(2));
        assert_eq!(v, ["c", "a", "b", "d"]);
        to_front(&mut v, Some(0));
        assert_eq!(v, ["c", "a", "b", "d"]);
        to_front(&mut v, None);
        to_front(&mut v, Some(9));
        assert_eq!(v, ["c", "a", "b", "d"]);
    }
}
