//! Typed names of monitor metrics: a [`MetricKey`] is a metric's family
//! (machine-wide, one core, one disk, one interface, one process group), its
//! instance (the core's number, the device's, interface's or group's name)
//! and its field, with the field's [`Unit`] and a label for people.
//!
//! As Vector's `host_metrics` keeps device names in a tag instead of the
//! metric's name, the key keeps the instance apart from the field; only
//! [`MetricKey::column`] joins them into `monitor.csv`'s column name
//! (`disk_dm_0_util_pct`), and [`MetricKey::parse`] splits a column name
//! back. Nothing else in peakhour takes column names apart.

use std::fmt;

use super::columns;
use super::fields::{CoreField, DiskField, GroupField, NetField, SystemField, Unit};

/// Which kind of thing a metric is about; every family but
/// [`Family::System`] has instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// The whole machine and the mail probes.
    System,
    /// One core, by number.
    Core,
    /// One block device, by kernel name.
    Disk,
    /// One network interface, by name.
    Network,
    /// One process group, by its configured name.
    Group,
}

impl Family {
    /// The column name's prefix before the instance (`disk_`); empty for
    /// [`Family::System`], `cpu` (no `_`: `cpu3_busy_pct`) for a core.
    fn prefix(self) -> &'static str {
        match self {
            Self::System => "",
            Self::Core => "cpu",
            Self::Disk => "disk_",
            Self::Network => "net_",
            Self::Group => "group_",
        }
    }
}

/// A metric's field, typed by its family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// Machine-wide.
    System(SystemField),
    /// Per core.
    Core(CoreField),
    /// Per block device.
    Disk(DiskField),
    /// Per network interface.
    Network(NetField),
    /// Per process group.
    Group(GroupField),
}

impl Field {
    /// The family the field belongs to.
    pub fn family(self) -> Family {
        match self {
            Self::System(_) => Family::System,
            Self::Core(_) => Family::Core,
            Self::Disk(_) => Family::Disk,
            Self::Network(_) => Family::Network,
            Self::Group(_) => Family::Group,
        }
    }

    /// The field's part of the column name.
    pub fn name(self) -> &'static str {
        match self {
            Self::System(f) => f.name(),
            Self::Core(f) => f.name(),
            Self::Disk(f) => f.name(),
            Self::Network(f) => f.name(),
            Self::Group(f) => f.name(),
        }
    }

    /// What the field's number means.
    pub fn unit(self) -> Unit {
        match self {
            Self::System(f) => f.unit(),
            Self::Core(f) => f.unit(),
            Self::Disk(f) => f.unit(),
            Self::Network(f) => f.unit(),
            Self::Group(f) => f.unit(),
        }
    }

    /// The field for people, without its instance.
    pub fn label(self) -> &'static str {
        match self {
            Self::System(f) => f.label(),
            Self::Core(f) => f.label(),
            Self::Disk(f) => f.label(),
            Self::Network(f) => f.label(),
            Self::Group(f) => f.label(),
        }
    }

    /// Every field of `family`, longest name first, so that a field whose
    /// name ends another's can never steal its columns when parsing.
    fn of_family_longest_first(family: Family) -> Vec<Field> {
        let mut fields: Vec<Field> = match family {
            Family::System => SystemField::ALL.iter().map(|&f| Self::System(f)).collect(),
            Family::Core => CoreField::ALL.iter().map(|&f| Self::Core(f)).collect(),
            Family::Disk => DiskField::ALL.iter().map(|&f| Self::Disk(f)).collect(),
            Family::Network => NetField::ALL.iter().map(|&f| Self::Network(f)).collect(),
            Family::Group => GroupField::ALL.iter().map(|&f| Self::Group(f)).collect(),
        };
        fields.sort_by_key(|f| std::cmp::Reverse(f.name().len()));
        fields
    }
}

/// One metric of `monitor.csv`: family and field, and the instance (core
/// number, device, interface or group name) for every family but
/// [`Family::System`].
///
/// ```
/// use peakhour_analysis::monitor::{DiskField, MetricKey, Unit};
///
/// let key = MetricKey::disk("dm-0", DiskField::UtilPct);
/// assert_eq!(key.column(), "disk_dm_0_util_pct");
/// assert_eq!(key.instance(), Some("dm_0"));
/// assert_eq!(key.unit(), Unit::Percent);
/// assert_eq!(key.label(), "disk dm_0 util %");
/// assert_eq!(MetricKey::parse("disk_dm_0_util_pct"), Some(key));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MetricKey {
    field: Field,
    /// Sanitized ([`columns::sanitize`]); `None` exactly for system metrics.
    instance: Option<String>,
}

impl MetricKey {
    /// A machine-wide metric.
    pub fn system(field: SystemField) -> Self {
        Self {
            field: Field::System(field),
            instance: None,
        }
    }

    /// A metric of core `index`.
    pub fn core(index: usize, field: CoreField) -> Self {
        Self {
            field: Field::Core(field),
            instance: Some(index.to_string()),
        }
    }

    /// A metric of a block device, by its kernel name (sanitized here).
    pub fn disk(device: &str, field: DiskField) -> Self {
        Self::with_instance(Field::Disk(field), device)
    }

    /// A metric of a network interface, by its name (sanitized here).
    pub fn network(interface: &str, field: NetField) -> Self {
        Self::with_instance(Field::Network(field), interface)
    }

    /// A metric of a process group, by its name (sanitized here).
    pub fn group(name: &str, field: GroupField) -> Self {
        Self::with_instance(Field::Group(field), name)
    }

    fn with_instance(field: Field, instance: &str) -> Self {
        Self {
            field,
            instance: Some(columns::sanitize(instance)),
        }
    }

    /// The family: machine-wide, core, disk, network or group.
    pub fn family(&self) -> Family {
        self.field.family()
    }

    /// The field, typed by its family.
    pub fn field(&self) -> Field {
        self.field
    }

    /// The core's number or the device's, interface's or group's name, as
    /// it appears in the column name; `None` for machine-wide metrics.
    pub fn instance(&self) -> Option<&str> {
        self.instance.as_deref()
    }

    /// What the number means.
    pub fn unit(&self) -> Unit {
        self.field.unit()
    }

    /// The metric for people: `CPU busy %`, `disk vda util %`,
    /// `Dovecot CPU % of a core`, `CPU 3 busy %`, `network lo drops/s`.
    pub fn label(&self) -> String {
        let field = self.field.label();
        let instance = self.instance.as_deref().unwrap_or_default();
        match self.family() {
            Family::System => field.to_owned(),
            Family::Core => format!("CPU {instance} {field}"),
            Family::Disk => format!("disk {instance} {field}"),
            Family::Network => format!("network {instance} {field}"),
            Family::Group => format!("{} {field}", group_display_name(instance)),
        }
    }

    /// The column name in `monitor.csv`.
    pub fn column(&self) -> String {
        let field = self.field.name();
        match &self.instance {
            None => field.to_owned(),
            Some(instance) => format!("{}{instance}_{field}", self.family().prefix()),
        }
    }

    /// The key a column of `monitor.csv` was named after; `None` for
    /// `time_s` and for names no key produces.
    pub fn parse(column: &str) -> Option<Self> {
        if let Some(&field) = SystemField::ALL.iter().find(|f| f.name() == column) {
            return Some(Self::system(field));
        }
        [Family::Core, Family::Disk, Family::Network, Family::Group]
            .into_iter()
            .find_map(|family| Self::parse_instance(family, column))
    }

    fn parse_instance(family: Family, column: &str) -> Option<Self> {
        let rest = column.strip_prefix(family.prefix())?;
        Field::of_family_longest_first(family)
            .into_iter()
            .find_map(|field| {
                let instance = rest.strip_suffix(field.name())?.strip_suffix('_')?;
                let valid = match family {
                    Family::Core => {
                        !instance.is_empty() && instance.bytes().all(|b| b.is_ascii_digit())
                    }
                    _ => !instance.is_empty() && columns::sanitize(instance) == instance,
                };
                valid.then(|| Self {
                    field,
                    instance: Some(instance.to_owned()),
                })
            })
    }
}

impl fmt::Display for MetricKey {
    /// The column name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.column())
    }
}

/// The instances that have a column for `field`, in column order, from a
/// table's column names: the disks with a `util_pct`, the groups with a
/// `cpu_pct` ...
pub fn instances_with<'a>(names: impl IntoIterator<Item = &'a str>, field: Field) -> Vec<String> {
    names
        .into_iter()
        .filter_map(MetricKey::parse)
        .filter(|key| key.field == field)
        .filter_map(|key| key.instance)
        .collect()
}

/// How a group is named for people: the servers as their projects write
/// them, any other group as configured.
fn group_display_name(group: &str) -> &str {
    match group {
        "dovecot" => "Dovecot",
        "postfix" => "Postfix",
        "cyrus" => "Cyrus",
        "radicale" => "Radicale",
        "samba" => "Samba",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_round_trips_through_its_column_name() {
        let mut keys: Vec<MetricKey> = SystemField::ALL
            .iter()
            .map(|&f| MetricKey::system(f))
            .collect();
        for &f in CoreField::ALL {
            keys.push(MetricKey::core(12, f));
        }
        // Instances that end like a field, or hold underscores.
        for instance in ["dm-0", "read", "x_util", "br-lan.10", "rx"] {
            keys.extend(DiskField::ALL.iter().map(|&f| MetricKey::disk(instance, f)));
            keys.extend(
                NetField::ALL
                    .iter()
                    .map(|&f| MetricKey::network(instance, f)),
            );
            keys.extend(
                GroupField::ALL
                    .iter()
                    .map(|&f| MetricKey::group(instance, f)),
            );
        }
        for key in keys {
            assert_eq!(MetricKey::parse(&key.column()), Some(key.clone()), "{key}");
        }
    }

    #[test]
    fn columns_are_named_as_docs_metrics_md_says() {
        assert_eq!(
            MetricKey::disk("dm-0", DiskField::UtilPct).column(),
            "disk_dm_0_util_pct"
        );
        assert_eq!(
            MetricKey::network("br-lan.10", NetField::RxBytesPerS).column(),
            "net_br_lan_10_rx_bytes_per_s"
        );
        assert_eq!(
            MetricKey::group("Dovecot", GroupField::CpuPct).column(),
            "group_dovecot_cpu_pct"
        );
        assert_eq!(
            MetricKey::core(3, CoreField::BusyPct).column(),
            "cpu3_busy_pct"
        );
        assert_eq!(
            MetricKey::system(SystemField::CpuBusyPct).column(),
            "cpu_busy_pct"
        );
    }

    #[test]
    fn names_that_no_key_makes_do_not_parse() {
        for name in [
            "time_s",
            "disk__util_pct",
            "disk_util_pct",
            "disk_vda_util",
            "cpux_busy_pct",
            "cpu_3_busy_pct",
            "group_Dovecot_cpu_pct",
            "net_lo_rx_bytes",
            "",
        ] {
            assert_eq!(MetricKey::parse(name), None, "{name}");
        }
    }

    #[test]
    fn family_instance_field_unit_and_label() {
        let key = MetricKey::parse("group_dovecot_cpu_pct").unwrap();
        assert_eq!(key.family(), Family::Group);
        assert_eq!(key.instance(), Some("dovecot"));
        assert_eq!(key.field(), Field::Group(GroupField::CpuPct));
        assert_eq!(key.unit(), Unit::Percent);
        assert_eq!(key.label(), "Dovecot CPU % of a core");
        let cpu = MetricKey::parse("cpu_busy_pct").unwrap();
        assert_eq!((cpu.family(), cpu.instance()), (Family::System, None));
        assert_eq!(cpu.label(), "CPU busy %");
        let core = MetricKey::parse("cpu0_idle_pct").unwrap();
        assert_eq!(core.label(), "CPU 0 idle %");
        let drops = MetricKey::parse("net_lo_drops_per_s").unwrap();
        assert_eq!(
            (drops.unit(), drops.unit().symbol()),
            (Unit::PerSecond, "/s")
        );
        assert_eq!(drops.label(), "network lo drops/s");
    }

    #[test]
    fn instances_come_in_column_order() {
        let names = [
            "time_s",
            "disk_vda_util_pct",
            "disk_vda_queue_len",
            "disk_dm_0_util_pct",
            "group_postfix_cpu_pct",
        ];
        assert_eq!(
            instances_with(names, Field::Disk(DiskField::UtilPct)),
            ["vda", "dm_0"]
        );
        assert_eq!(
            instances_with(names, Field::Group(GroupField::CpuPct)),
            ["postfix"]
        );
    }
}
