//! The lab's own cost beside a test's figures: each relay's and impairment stage's CPU
//! time with its data path, and the host's softirq time and load ([`LabCost`],
//! [`model::results::nic::HostLoad`]).

use model::results::campaign::Campaign;
use model::results::lab::LabCost;
use model::results::RunResult;

use super::sections::LAB_COST;
use super::sourced;
use crate::table::Table;

/// One row per device: lab, node, device, data path, process CPU s, kernel CPU s, % of
/// one CPU.
fn device_rows(cost: &LabCost) -> Vec<Vec<String>> {
    cost.devices
        .iter()
        .map(|d| {
            vec![
                d.lab.clone(),
                d.node.clone(),
                d.device.clone(),
                d.data_path.clone(),
                format!("{:.2}", d.process_cpu_s),
                d.kernel_cpu_s.map_or("-".into(), |k| format!("{k:.3}")),
                format!("{:.1}", d.cpu_percent),
            ]
        })
        .collect()
}

/// The devices' table on a terminal, or `None` without a lab.
pub fn devices(r: &RunResult) -> Option<Table> {
    let cost = r.lab_cost.as_ref()?;
    let rows = device_rows(cost);
    let cols = LAB_COST
        .columns
        .split_once('|')
        .map_or("", |(_, rest)| rest);
    let cols = cols.rsplitn(3, '|').nth(2).unwrap_or(cols);
    (!rows.is_empty()).then(|| Table {
        headers: crate::table::columns(cols),
        ..LAB_COST.with(rows)
    })
}

/// The line under the devices' table: the host's softirq time and load over the test.
pub fn host_line(r: &RunResult) -> Option<String> {
    let cost = r.lab_cost.as_ref()?;
    let mut line = format!(
        "lab devices over {:.1} s (% of one CPU); the host's softirq time (kernel forwarding, shaping, BPF fast paths and the test's own packets) {:.2} s",
        cost.seconds, cost.host_softirq_s
    );
    if let Some(h) = &r.host_load {
        line.push_str(&format!(
            "; the host's {} CPUs {:.0} % busy",
            h.cpus, h.cpu_busy_percent
        ));
    }
    Some(line)
}

/// The report's section: per test through a lab, each device and the host's figures.
pub fn report(c: &Campaign) -> Option<Table> {
    LAB_COST.table(sourced(c, |r| {
        let Some(cost) = &r.lab_cost else {
            return vec![];
        };
        let busy = r
            .host_load
            .as_ref()
            .map_or("-".into(), |h| format!("{:.0}", h.cpu_busy_percent));
        let host = [format!("{:.2}", cost.host_softirq_s), busy];
        device_rows(cost)
            .into_iter()
            .map(|mut row| {
                row.extend(host.iter().cloned());
                row
            })
            .collect()
    }))
}

#[cfg(test)]
mod test {
    use super::*;
    use model::results::lab::DeviceCost;

    #[test]
    fn each_device_reads_its_data_path_and_share_of_a_cpu() {
        let mut r = RunResult::new(
            "client",
            serde_json::json!({}),
            String::new(),
            Default::default(),
        );
        assert!(devices(&r).is_none() && host_line(&r).is_none());
        r.lab_cost = Some(LabCost {
            labs: vec!["x".into()],
            seconds: 2.0,
            devices: vec![DeviceCost {
                lab: "x".into(),
                node: "split".into(),
                device: "FRER relay".into(),
                data_path: "kernel".into(),
                process_cpu_s: 0.02,
                kernel_cpu_s: Some(0.3),
                cpu_percent: 16.0,
            }],
            host_softirq_s: 0.75,
        });
        let t = devices(&r).expect("a table").text();
        assert!(
            t.contains("kernel") && t.contains("16.0") && t.contains("0.300"),
            "{t}"
        );
        assert!(
            !t.contains("softirq"),
            "host columns stay out of the terminal table:\n{t}"
        );
        assert!(host_line(&r).unwrap().contains("0.75 s"));
    }
}
