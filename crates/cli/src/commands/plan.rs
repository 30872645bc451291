//! `peakhour plan`: the sizing answer from measured task costs and a
//! profile's rates. It runs nothing: `peakhour_analysis::plan::Plan::compute`
//! computes, `peakhour_report::plan` lays out, and this file only maps the
//! profile onto per-user rates (docs/planner.md, "Inputs") and the host onto
//! capacities.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use peakhour_analysis::plan::{
    HostCapacity, Plan, PlanRequest, Price, QosModel, SweepCapacity, TaskSet,
};
use peakhour_lab::Lab;
use peakhour_report::plan::{
    plan_json, render_plan_html, render_plan_terminal, tasks_from_json, write_plan_csv,
};
use peakhour_workload::{Overrides, Profile};

use super::planner::{host_capacity, shape_label};
use super::target::load_profile;
use crate::args::PlanArgs;

pub(crate) fn run(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.tasks)
        .with_context(|| format!("cannot read {}", args.tasks.display()))?;
    let tasks = tasks_from_json(&text)
        .with_context(|| format!("{} is not a tasks.json", args.tasks.display()))?;
    let profile = load_profile(&args.profile.profile)?;
    let (rates, notes) = rates_per_user_hour(&profile, args.speed, args.sessions_per_user, &tasks)?;
    let qos = QosModel {
        p95_limit_ms: args
            .qos_p95_ms
            .unwrap_or_else(|| *profile.qos.p95_ms.get_ref()),
        sweep: args.sweep.as_deref().map(read_sweep).transpose()?,
    };
    let request = PlanRequest {
        profile: profile.name.clone(),
        rates_per_user_hour: rates,
        sessions_per_user: args.sessions_per_user,
        users: args.users.clone(),
        headroom: args.headroom,
        host: Some(host(&args)?),
        qos,
        price: args.price.as_deref().map(parse_price).transpose()?,
    };
    let mut plan = Plan::compute(&tasks, &request)?;
    plan.warnings.extend(notes);
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        write(&dir.join("plan.json"), plan_json(&plan)?)?;
        let mut csv = Vec::new();
        write_plan_csv(&plan, &mut csv)?;
        write(&dir.join("plan.csv"), csv)?;
        write(&dir.join("plan.html"), render_plan_html(&plan))?;
    }
    if args.json {
        print!("{}", plan_json(&plan)?);
    } else {
        print!("{}", render_plan_terminal(&plan));
        if let Some(dir) = &args.out {
            println!("results: {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// The per-user rates of docs/planner.md ("Inputs"), at the profile's speed
/// or `speed`:
///
/// * every action: its resolved rate per real second × 3600;
/// * `logon`: one logon per simulated day;
/// * `idle_session`: the sessions each user holds (a session-hour task);
/// * `deliver`: only when `send` was not measured. A `send` task's window
///   holds the deliveries its messages caused (Postfix and Dovecot's LMTP run
///   in the same lab), so adding `deliver` for every recipient would charge
///   them twice; without `send`, deliveries are send rate × recipients.
///
/// Returns the rates and notes for the plan's warnings.
pub(crate) fn rates_per_user_hour(
    profile: &Profile,
    speed: Option<f64>,
    sessions_per_user: f64,
    tasks: &TaskSet,
) -> anyhow::Result<(BTreeMap<String, f64>, Vec<String>)> {
    if let Some(s) = speed
        && !(s > 0.0 && s.is_finite())
    {
        bail!("--speed must be a positive number");
    }
    let plan = peakhour_workload::Plan::resolve(
        profile,
        &Overrides {
            speed,
            ..Overrides::default()
        },
    )?;
    let mut rates = BTreeMap::new();
    for r in plan.rates() {
        rates.insert(r.kind.name().to_owned(), r.per_second * 3600.0);
    }
    let mut notes = Vec::new();
    let day_hours = plan.day().as_secs_f64() / 3600.0;
    rates.insert("logon".to_owned(), plan.speed() / day_hours);
    rates.insert("idle_session".to_owned(), sessions_per_user);
    let send = rates.get("send").copied();
    if let Some(send) = send {
        if tasks.task("send").is_some() {
            notes.push(
                "deliver is not added: the send task's window already holds the deliveries its messages caused"
                    .to_owned(),
            );
        } else if tasks.task("deliver").is_some() {
            rates.insert(
                "deliver".to_owned(),
                send * *profile.recipients.average.get_ref(),
            );
        }
    }
    // Only rates for measured tasks: the rest would only be warned about.
    let missing: Vec<String> = rates
        .keys()
        .filter(|name| tasks.task(name).is_none())
        .cloned()
        .collect();
    for name in &missing {
        rates.remove(name);
    }
    if !missing.is_empty() {
        notes.push(format!(
            "no measured task for {}: left out of the plan",
            missing.join(", ")
        ));
    }
    Ok((rates, notes))
}

/// The host: a shaped lab's caps, or this machine's, with the flags on top.
fn host(args: &PlanArgs) -> anyhow::Result<HostCapacity> {
    let (mut cores, memory) = host_capacity();
    let mut memory = memory as f64;
    let mut label = "this host".to_owned();
    if let Some(dir) = &args.host_lab {
        let status = Lab::new(dir)
            .status()
            .with_context(|| format!("--host-lab {}: no lab there", dir.display()))?;
        let limits = &status.limits;
        cores = limits.cpus.unwrap_or(cores);
        memory = limits.memory_bytes.map_or(memory, |m| m as f64);
        label = format!("lab {}", shape_label(limits.cpus, limits.memory_bytes));
    }
    if let Some(c) = args.host_cpus {
        cores = c;
    }
    if let Some(m) = args.host_memory {
        memory = m as f64;
    }
    if args.host_cpus.is_some() || args.host_memory.is_some() {
        label = format!(
            "{} CPUs × {} MiB",
            cores,
            (memory / (1024.0 * 1024.0)).round()
        );
    }
    if !(cores > 0.0 && cores.is_finite()) {
        bail!("--host-cpus must be a positive number of cores");
    }
    Ok(HostCapacity {
        label,
        cores,
        memory_bytes: memory,
        disk_iops: args.host_disk_iops,
        disk_kib_per_s: args.host_disk_kib_s,
        net_kib_per_s: args.host_net_kib_s,
    })
}

/// A sweep's QoS capacity from its `capacity.json` (or the directory
/// holding it).
fn read_sweep(path: &Path) -> anyhow::Result<SweepCapacity> {
    let file = if path.is_dir() {
        path.join("capacity.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    let qos = &json["qos"];
    let users = qos["load"].as_f64().with_context(|| {
        format!(
            "{}: the sweep has no QoS capacity (qos.bound {})",
            file.display(),
            qos["bound"]
        )
    })?;
    Ok(SweepCapacity {
        users,
        source: format!(
            "sweep {} ({})",
            file.display(),
            qos["bound"].as_str().unwrap_or("qos capacity")
        ),
    })
}

/// `2659`, `2659USD`, `2659 EUR`.
fn parse_price(text: &str) -> anyhow::Result<Price> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (amount, currency) = text.split_at(split);
    let amount: f64 = amount
        .parse()
        .with_context(|| format!("--price {text:?}: expected an amount like 2659 or 2659USD"))?;
    let currency = currency.trim();
    Ok(Price {
        amount,
        currency: if currency.is_empty() {
            "USD".to_owned()
        } else {
            currency.to_owned()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_read_with_and_without_a_currency() {
        assert_eq!(parse_price("2659").unwrap().amount, 2659.0);
        let p = parse_price("2659.5 EUR").unwrap();
        assert_eq!((p.amount, p.currency.as_str()), (2659.5, "EUR"));
        assert!(parse_price("USD").is_err());
    }
}
