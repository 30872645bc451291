//! Price/performance, as seed 004 computed it.
//!
//! Mindcraft divided "the street price of the software tested by the peak
//! throughput measured in megabits per second" ($2,659 / 95.2 Mbit/s =
//! $27.93 per Mbit/s). peakhour divides a price by the throughput at the
//! capacity (actions per second, or any unit the caller names) and, since
//! a mail server is bought for people, by the users it supports.

use serde::{Deserialize, Serialize};

use super::{PlanError, check};

/// A price and what it buys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// The amount.
    pub amount: f64,
    /// Its currency or unit, e.g. `USD`.
    pub currency: String,
}

impl std::str::FromStr for Price {
    type Err = PlanError;

    /// `2659`, `2659USD`, `2659.5 EUR`; the currency is `USD` when none is
    /// written.
    fn from_str(text: &str) -> Result<Self, PlanError> {
        let text = text.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (amount, currency) = text.split_at(split);
        let amount: f64 = amount
            .parse()
            .map_err(|_| PlanError::BadPrice(text.to_owned()))?;
        let currency = currency.trim();
        Ok(Price {
            amount: check("price", amount, 0.0, false)?,
            currency: if currency.is_empty() {
                "USD".to_owned()
            } else {
                currency.to_owned()
            },
        })
    }
}

/// Price per supported user and per unit of peak throughput.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PricePerformance {
    /// The price.
    pub price: f64,
    /// Its currency.
    pub currency: String,
    /// Users supported (the plan's QoS capacity, or a sweep's).
    pub supported_users: f64,
    /// `price / supported_users`; `None` with no user supported.
    pub per_supported_user: Option<f64>,
    /// Throughput at the capacity, in `throughput_unit`.
    pub peak_throughput: f64,
    /// E.g. `actions/s`, `Mbit/s`.
    pub throughput_unit: String,
    /// `price / peak_throughput` (seed 004's figure); `None` at zero
    /// throughput.
    pub per_throughput_unit: Option<f64>,
    /// Which capacity the figures use, e.g. `max_users_at_qos (model)`.
    pub basis: String,
}

/// Seed 004's division, for the plan and for `sweep --price`.
pub fn price_performance(
    price: &Price,
    supported_users: f64,
    peak_throughput: f64,
    throughput_unit: &str,
    basis: &str,
) -> Result<PricePerformance, PlanError> {
    check("price", price.amount, 0.0, false)?;
    check("supported users", supported_users, 0.0, false)?;
    check("peak throughput", peak_throughput, 0.0, false)?;
    let per = |d: f64| (d > 0.0).then(|| price.amount / d);
    Ok(PricePerformance {
        price: price.amount,
        currency: price.currency.clone(),
        supported_users,
        per_supported_user: per(supported_users),
        peak_throughput,
        throughput_unit: throughput_unit.to_owned(),
        per_throughput_unit: per(peak_throughput),
        basis: basis.to_owned(),
    })
}
