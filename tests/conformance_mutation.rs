//! The suite catches broken implementations: each deliberate fault of
//! `mroce_conformance::mutation` (injected on the adapter side, the model untouched) makes at
//! least one case fail, and the failing cases are the ones that check the broken behaviour.

use mroce_conformance::model::ModelAdapter;
use mroce_conformance::mutation::{Mutant, Mutation};
use mroce_conformance::{run, Verdict};

fn failing(m: Mutation) -> Vec<String> {
    let mut a = Mutant::new(ModelAdapter::new(0x6d72_6f63), m);
    let (rows, s) = run(&mut a, None);
    assert_eq!(s.not_applicable, 0);
    rows.into_iter()
        .filter(|r| matches!(r.verdict, Verdict::Fail(_)))
        .map(|r| r.id.to_string())
        .collect()
}

#[test]
fn every_mutation_fails_some_case() {
    // (mutation, a case that must catch it)
    let expect = [
        (Mutation::FlipRkey, "C-5.11-02"),
        (Mutation::DropRetransmissions, "C-8.4-02"),
        (Mutation::SkipIcrcCheck, "C-3.7-01"),
        (Mutation::RetransmitWrongPsn, "C-8.4-02"),
    ];
    for (m, id) in expect {
        let f = failing(m);
        eprintln!("{m:?}: {} cases fail: {}", f.len(), f.join(" "));
        assert!(!f.is_empty(), "{m:?} made no case fail");
        assert!(f.iter().any(|x| x == id), "{m:?} should fail {id}; failing: {f:?}");
    }
}
