//! Placements being scheduled and written ("in flight"), and the watch events of their own
//! decisions and of themselves that arrive meanwhile.
//!
//! The echo of a write (its watch event) can arrive before the controller has the API server's
//! answer, so it cannot yet be told from someone else's change. While a placement is in flight,
//! such events do not schedule it again; they are kept, and when its writes are done
//! [`Flight::land`] compares them with what it wrote: only an event that is not one of its own
//! writes asks for the placement to be scheduled again.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::index::PlacementKey;

/// A watch event seen while its placement was in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    /// A decision of the placement, created or changed, at a resourceVersion.
    Decision(String, Option<String>),
    /// A decision of the placement, deleted.
    DecisionDeleted(String),
    /// The placement itself, at a resourceVersion.
    Placement(Option<String>),
}

/// What one placement in flight wrote, as the API server answered.
#[derive(Debug, Default)]
pub struct Writes {
    /// Decisions created or patched: name and the resourceVersion returned.
    pub decisions: HashSet<(String, Option<String>)>,
    /// Decisions deleted, by name.
    pub deleted: HashSet<String>,
    /// The resourceVersion its status patch returned.
    pub placement: Option<Option<String>>,
}

impl Writes {
    fn own(&self, seen: &Seen) -> bool {
        match seen {
            Seen::Decision(name, rv) => self.decisions.contains(&(name.clone(), rv.clone())),
            Seen::DecisionDeleted(name) => self.deleted.contains(name),
            Seen::Placement(rv) => self.placement.as_ref() == Some(rv),
        }
    }
}

/// The placements in flight and what was seen of them.
#[derive(Debug, Default)]
pub struct Flights {
    seen: Mutex<HashMap<PlacementKey, Vec<Seen>>>,
}

impl Flights {
    fn lock(&self) -> MutexGuard<'_, HashMap<PlacementKey, Vec<Seen>>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts `placement` in flight until the returned [`Flight`] lands or is dropped.
    pub fn start(self: &Arc<Self>, placement: PlacementKey) -> Flight {
        self.lock().insert(placement.clone(), Vec::new());
        Flight {
            flights: self.clone(),
            placement,
        }
    }

    fn hold(&self, placement: &PlacementKey, seen: Seen) -> bool {
        match self.lock().get_mut(placement) {
            Some(held) => {
                held.push(seen);
                true
            }
            None => false,
        }
    }

    /// Keeps the event of a decision of `placement` when the placement is in flight; whether it
    /// was kept (then it must not schedule the placement now).
    pub fn hold_decision(
        &self,
        placement: &PlacementKey,
        name: &str,
        resource_version: Option<String>,
        deleted: bool,
    ) -> bool {
        let seen = if deleted {
            Seen::DecisionDeleted(name.to_string())
        } else {
            Seen::Decision(name.to_string(), resource_version)
        };
        self.hold(placement, seen)
    }

    /// Keeps the event of `placement` itself when it is in flight; whether it was kept.
    pub fn hold_placement(&self, placement: &PlacementKey, resource_version: Option<String>) -> bool {
        self.hold(placement, Seen::Placement(resource_version))
    }
}

/// One placement in flight; dropping it without [`Flight::land`] forgets what was seen (a failed
/// write is retried with backoff anyway).
#[derive(Debug)]
pub struct Flight {
    flights: Arc<Flights>,
    placement: PlacementKey,
}

impl Flight {
    /// Ends the flight: whether an event seen meanwhile was not one of `writes` (someone else
    /// changed the placement or its decisions, so it must be scheduled again).
    #[must_use]
    pub fn land(self, writes: &Writes) -> bool {
        let seen = self.flights.lock().remove(&self.placement).unwrap_or_default();
        seen.iter().any(|s| !writes.own(s))
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        self.flights.lock().remove(&self.placement);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> PlacementKey {
        ("ns".to_string(), "p".to_string())
    }

    #[test]
    fn events_are_held_only_in_flight() {
        let flights = Arc::new(Flights::default());
        assert!(!flights.hold_placement(&key(), Some("1".into())));
        let flight = flights.start(key());
        assert!(flights.hold_placement(&key(), Some("2".into())));
        assert!(flights.hold_decision(&key(), "p-decision-1", Some("3".into()), false));
        drop(flight);
        assert!(!flights.hold_decision(&key(), "p-decision-1", Some("4".into()), false));
    }

    #[test]
    fn echoes_of_own_writes_land_quietly() {
        let flights = Arc::new(Flights::default());
        let flight = flights.start(key());
        flights.hold_decision(&key(), "p-decision-1", Some("3".into()), false);
        flights.hold_decision(&key(), "p-decision-2", None, true);
        flights.hold_placement(&key(), Some("5".into()));
        let writes = Writes {
            decisions: [("p-decision-1".to_string(), Some("3".to_string()))].into(),
            deleted: ["p-decision-2".to_string()].into(),
            placement: Some(Some("5".into())),
        };
        assert!(!flight.land(&writes));
    }

    #[test]
    fn someone_elses_change_in_flight_asks_for_another_round() {
        let flights = Arc::new(Flights::default());
        let writes = Writes {
            decisions: [("p-decision-1".to_string(), Some("3".to_string()))].into(),
            ..Writes::default()
        };
        let flight = flights.start(key());
        flights.hold_decision(&key(), "p-decision-1", Some("4".into()), false);
        assert!(flight.land(&writes));
        let flight = flights.start(key());
        flights.hold_placement(&key(), Some("6".into()));
        assert!(flight.land(&writes));
        let flight = flights.start(key());
        flights.hold_decision(&key(), "p-decision-1", None, true);
        assert!(flight.land(&writes));
    }
}
