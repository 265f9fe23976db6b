//! Shared strings and string lists for the RBAC [`super::rbac::Policy`].
//!
//! A hub keeps a ClusterRole, a ClusterRoleBinding and two RoleBindings per managed cluster, and
//! they repeat the same verbs, API groups, resources and subjects: the policy of a thousand
//! clusters held 5 MiB, most of it copies of the same few strings and of a `BTreeMap` node per
//! small map. The [`Interner`] hands out one allocation per distinct string and per distinct list
//! of strings, so a rule is five pointers into shared lists.
//!
//! Entries nothing else holds any more (the roles and bindings of deleted clusters) are dropped
//! when the interner has doubled since it last did so: its size stays proportional to the
//! policy's, at an amortized constant cost per insertion.

use std::collections::HashSet;
use std::sync::Arc;

/// A list of shared strings.
pub type Strings = Arc<[Arc<str>]>;

/// The fewest entries the interner holds before it prunes at all.
const PRUNE_FLOOR: usize = 1024;

/// One shared allocation per distinct string and per distinct list of strings.
#[derive(Debug, Clone, Default)]
pub struct Interner {
    strings: HashSet<Arc<str>>,
    lists: HashSet<Strings>,
    /// Entries kept by the last prune; the next comes when the interner holds twice as many.
    kept: usize,
}

impl Interner {
    /// The shared copy of `text`.
    pub fn string(&mut self, text: &str) -> Arc<str> {
        if let Some(found) = self.strings.get(text) {
            return found.clone();
        }
        self.prune_when_grown();
        let new: Arc<str> = Arc::from(text);
        self.strings.insert(new.clone());
        new
    }

    /// The shared list of `items`, each item shared too.
    pub fn list<'a>(&mut self, items: impl IntoIterator<Item = &'a str>) -> Strings {
        let items: Vec<Arc<str>> = items.into_iter().map(|item| self.string(item)).collect();
        if let Some(found) = self.lists.get(items.as_slice()) {
            return found.clone();
        }
        self.prune_when_grown();
        let new: Strings = Arc::from(items);
        self.lists.insert(new.clone());
        new
    }

    /// How many strings and lists the interner holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.strings.len() + self.lists.len()
    }

    /// Drops the entries only the interner holds, once it has doubled since the last time.
    fn prune_when_grown(&mut self) {
        if self.strings.len() + self.lists.len() < 2 * self.kept.max(PRUNE_FLOOR) {
            return;
        }
        // Lists first: a list dropped here releases its strings for the second pass.
        self.lists.retain(|list| Arc::strong_count(list) > 1);
        self.strings.retain(|text| Arc::strong_count(text) > 1);
        self.kept = self.strings.len() + self.lists.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_and_lists_share_one_allocation() {
        let mut interner = Interner::default();
        let a = interner.string("get");
        let b = interner.string(&String::from("get"));
        assert!(Arc::ptr_eq(&a, &b));
        let first = interner.list(["get", "list"]);
        let second = interner.list(["get", "list"]);
        assert!(Arc::ptr_eq(&first, &second));
        assert!(
            Arc::ptr_eq(&first[0], &a),
            "a list's items are the shared strings"
        );
        let other = interner.list(["list", "get"]);
        assert!(!Arc::ptr_eq(&first, &other), "order matters");
        assert_eq!(interner.list([]).len(), 0);
    }

    #[test]
    fn entries_nothing_else_holds_are_dropped_as_it_grows() {
        let mut interner = Interner::default();
        let held = interner.list(["kept"]);
        for n in 0..10 * PRUNE_FLOOR {
            drop(interner.list([format!("gone-{n}").as_str()]));
        }
        // Each prune leaves only what is held (and the newest entries since): never more than
        // twice the floor.
        assert!(interner.len() < 2 * PRUNE_FLOOR, "{} entries", interner.len());
        assert!(
            Arc::ptr_eq(&held, &interner.list(["kept"])),
            "a held list survives"
        );
    }
}
