//! The NIC matrix's arithmetic (`nicmatrix`): the combinations of MTUs and feature states
//! to run, in order, and which MTU did best. Pure: `campaign` sets the interfaces and runs
//! a block-size sweep ([`crate::blocksize`]) per combination.

use std::collections::BTreeMap;

use model::results::nic::NicCell;

/// One combination: an MTU (or none) and feature states by kernel name.
#[derive(Debug, Clone, PartialEq)]
pub struct Combination {
    /// The MTU to set, if any.
    pub mtu: Option<u32>,
    /// Feature states by kernel name.
    pub features: BTreeMap<String, bool>,
}

impl Combination {
    /// `mtu 9000, rx-checksum off` (`as set` when it sets nothing).
    pub fn label(&self) -> String {
        let mut parts: Vec<String> = self.mtu.map(|m| format!("mtu {m}")).into_iter().collect();
        parts.extend(
            self.features
                .iter()
                .map(|(f, on)| format!("{f} {}", if *on { "on" } else { "off" })),
        );
        if parts.is_empty() {
            "as set".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Every combination, MTU outermost, then the features in the order given; features by
/// their kernel names (`kernel_name` maps an ethtool alias).
pub fn combinations(
    mtus: &[u32],
    features: &[(String, Vec<bool>)],
    kernel_name: impl Fn(&str) -> &str,
) -> Vec<Combination> {
    let mut out: Vec<Combination> = if mtus.is_empty() {
        vec![Combination {
            mtu: None,
            features: BTreeMap::new(),
        }]
    } else {
        mtus.iter()
            .map(|&m| Combination {
                mtu: Some(m),
                features: BTreeMap::new(),
            })
            .collect()
    };
    for (name, states) in features {
        let kernel = kernel_name(name);
        out = out
            .iter()
            .flat_map(|c| {
                states.iter().map(move |&on| {
                    let mut c = c.clone();
                    c.features.insert(kernel.to_owned(), on);
                    c
                })
            })
            .collect();
    }
    out
}

/// The MTU whose cells had the highest mean rate, with more than one MTU.
pub fn best_mtu(cells: &[NicCell]) -> Option<u32> {
    let mut by_mtu: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for c in cells {
        if let (Some(m), Some(v)) = (c.mtu, c.mean_mbyte_s()) {
            by_mtu.entry(m).or_default().push(v);
        }
    }
    if by_mtu.len() < 2 {
        return None;
    }
    by_mtu
        .into_iter()
        .map(|(m, v)| (m, v.iter().sum::<f64>() / v.len() as f64))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(m, _)| m)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn combinations_cross_mtus_and_features() {
        fn alias(n: &str) -> &str {
            if n == "lro" {
                "rx-lro"
            } else {
                n
            }
        }
        let c = combinations(
            &[1500, 9000],
            &[
                ("rx-checksum".into(), vec![true, false]),
                ("lro".into(), vec![false]),
            ],
            alias,
        );
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].label(), "mtu 1500, rx-checksum on, rx-lro off");
        assert_eq!(c[3].label(), "mtu 9000, rx-checksum off, rx-lro off");
        assert_eq!(combinations(&[], &[], alias).len(), 1);
        assert_eq!(combinations(&[], &[], alias).remove(0).label(), "as set");
    }

    #[test]
    fn the_best_mtu_has_the_highest_mean() {
        let cell = |mtu, v| NicCell {
            mtu: Some(mtu),
            rows: vec![model::results::BlocksizeRow {
                block_bytes: 1024,
                tx_mbyte_s: v,
                rx_mbyte_s: v,
                duration_s: 1.0,
                client_cpu: None,
                server_cpu: None,
            }],
            ..NicCell::default()
        };
        let cells = [
            cell(1500, 100.0),
            cell(4000, 300.0),
            cell(9000, 200.0),
            cell(4000, 250.0),
        ];
        assert_eq!(best_mtu(&cells), Some(4000));
        assert_eq!(best_mtu(&cells[..1]), None);
    }
}
