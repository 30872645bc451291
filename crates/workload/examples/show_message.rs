//! Prints one generated message of each mix entry of a built-in profile (base64 shortened).
//!
//! `cargo run -p peakhour-workload --example show_message -- [PROFILE]`

use peakhour_workload::{MessageGenerator, MessageSpec, Overrides, Plan, builtin};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "mmb-medium".to_owned());
    let plan = Plan::resolve(&builtin(&name)?.profile()?, &Overrides::default())?;
    let generator = MessageGenerator::new(plan.seed());
    for (i, kind) in plan.mix().iter().enumerate() {
        let choice = plan.send_choice(0, i as u64);
        let mut to: Vec<String> = choice.direct.iter().map(|&u| plan.address(u)).collect();
        if let Some(l) = choice.list {
            to.push(plan.list_address(l));
        }
        let bytes = generator.generate(&MessageSpec {
            run_id: "example",
            id: &choice.id,
            from: &plan.address(0),
            to: &to,
            date: "Tue, 04 Mar 2025 09:15:00 +0000",
            kind,
        });
        println!("===== {} ({} bytes on the wire)", kind.label, bytes.len());
        let text = String::from_utf8_lossy(&bytes);
        let mut base64_run = 0;
        for line in text.split("\r\n") {
            let is_b64 = line.len() == 76 && !line.contains(' ');
            base64_run = if is_b64 { base64_run + 1 } else { 0 };
            if base64_run <= 2 {
                println!("{line}");
            } else if base64_run == 3 {
                println!("[... base64 ...]");
            }
        }
    }
    Ok(())
}
