//! Where a Thunderbird user's warm start meets the folders that decide its
//! extra connections: its sweep walks the folders in one fixed shuffle per
//! profile ([`ClientModel::sweep_order`]), and opens a connection for Sent
//! (written at the last session) and for the day's move target when the walk
//! reaches them. Which action's window holds those connections depends on
//! that draw, so the fidelity test and the CPU measurement of a scripted
//! session (`scripts/record/scripted.py`) choose run seeds whose draw is like
//! the recording's (docs/clients.md, "Fidelity").

use peakhour_imap::clients::{ClientModel, View, profile_key};
use peakhour_workload::Plan;

/// Where the start's sweep of a Thunderbird user meets Sent and the move
/// target of the user's action number `move_seq` (from 0), of how many folders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartDraw {
    /// Sent's place in the sweep, from 0.
    pub sent_at: usize,
    /// The folder the move goes to.
    pub target: String,
    /// The move target's place in the sweep, from 0.
    pub target_at: usize,
    /// The folders the sweep walks.
    pub folders: usize,
}

/// The draw of `user` in `plan`, from the model's own order and the move
/// target as the engine picks it for the user's action `move_seq`. The folder
/// list is the profile's (its move targets, Inbox, Trash, Sent, Calendar and
/// Drafts), which is what `peakhour init` creates.
pub fn thunderbird_start_draw(plan: &Plan, user: u32, move_seq: u64) -> StartDraw {
    let params = plan.params();
    let mut folders: Vec<String> = params.move_targets.clone();
    for special in [
        &params.inbox,
        &params.trash,
        &params.sent_folder,
        &params.calendar_folder,
    ] {
        folders.push(special.clone());
    }
    folders.push("Drafts".to_owned());
    folders.sort();
    folders.dedup();
    let target = plan
        .move_target(user, move_seq)
        .map(|at| params.move_targets[at].clone())
        .unwrap_or_default();
    let view = View {
        inbox: &params.inbox,
        sent: &params.sent_folder,
        trash: &params.trash,
        drafts: "Drafts",
        folders: &folders,
        uids: &[],
        open: &[],
        pending_seen: &[],
    };
    let order = ClientModel::Thunderbird.sweep_order(&view, profile_key(plan.seed(), user));
    let at = |name: &str| order.iter().position(|f| f == name).unwrap_or(order.len());
    StartDraw {
        sent_at: at(&params.sent_folder),
        target_at: at(&target),
        target,
        folders: order.len(),
    }
}

/// The recorded warm start's draw, roughly: Sent 33rd to 39th and the move
/// target among the last two of the sweep (the recording had Sent 36th and
/// Folder1 last of 43), so that both connections open during the move and
/// the second one's IDLE falls in the delete.
pub fn draw_like_recording(draw: &StartDraw) -> bool {
    (32..=38).contains(&draw.sent_at) && draw.target_at + 2 >= draw.folders
}
