//! The delivery record stays bounded and balanced (issue 11): lost
//! recipients past the cap are counted, not listed, and old records without
//! the new fields still read.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use peakhour_analysis::{DeliveryRecord, DeliveryRecorder, LOST_LIST_CAP};

#[test]
fn issue_11_lost_recipients_past_the_cap_are_counted_not_listed() {
    let mut recorder = DeliveryRecorder::new();
    let lost = LOST_LIST_CAP as u64 + 250;
    recorder.submitted(lost + 5);
    recorder.failed(5);
    for n in 0..lost {
        recorder.lost(format!("s{n}.0.run@x.test"), "u@x.test");
    }
    recorder.lost_not_listed(100);
    recorder.lost_unsearched(7);
    let record = recorder.finish().unwrap();
    assert_eq!(record.lost.len(), LOST_LIST_CAP);
    assert_eq!(record.lost_not_listed, 350);
    assert_eq!(record.lost_total(), lost + 100);
    assert_eq!(record.lost_unsearched, 7);

    // Written and read back; a record from before these fields reads as 0.
    let json = serde_json::to_value(&record).unwrap();
    let back: DeliveryRecord = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back, record);
    let mut old = json;
    old.as_object_mut().unwrap().remove("lost_not_listed");
    old.as_object_mut().unwrap().remove("lost_unsearched");
    let old: DeliveryRecord = serde_json::from_value(old).unwrap();
    assert_eq!(old.lost_not_listed, 0);
    assert_eq!(old.lost_total(), LOST_LIST_CAP as u64);
}
