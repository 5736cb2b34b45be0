//! Deliberate faults on the adapter side (stub).
