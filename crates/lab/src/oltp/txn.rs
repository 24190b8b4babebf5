//! The five TPC-C transactions, reduced to their reads and writes.

use std::collections::BTreeSet;
use std::ops::Bound::{Excluded, Included};

use flashkv_engine::{Db, WriteBatch};
use rand::{rngs::SmallRng, Rng};

use super::{add_field, field, key, last_id, nurand, row, set_field, Scale, Table, DISTRICTS};
use crate::lab::LabError;

/// What a transaction fails with: the engine's errors, or a row the load
/// should have written and did not.
type Result<T> = std::result::Result<T, LabError>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

/// The seed's mix, in percent (§4: 45/43/4/4/4).
pub const MIX: [(Kind, u32); 5] = [
    (Kind::NewOrder, 45),
    (Kind::Payment, 43),
    (Kind::OrderStatus, 4),
    (Kind::Delivery, 4),
    (Kind::StockLevel, 4),
];

impl Kind {
    pub fn pick(rng: &mut SmallRng) -> Kind {
        let mut r = rng.gen_range(0..100);
        for (k, p) in MIX {
            if r < p {
                return k;
            }
            r -= p;
        }
        unreachable!("the mix sums to 100")
    }

    pub fn run(self, db: &Db, s: Scale, rng: &mut SmallRng) -> Result<()> {
        let w = rng.gen_range(0..s.warehouses);
        let d = rng.gen_range(0..DISTRICTS);
        match self {
            Kind::NewOrder => new_order(db, s, rng, w, d),
            Kind::Payment => payment(db, s, rng, w, d),
            Kind::OrderStatus => order_status(db, s, rng, w, d),
            Kind::Delivery => delivery(db, w, rng.gen_range(1..=10)),
            Kind::StockLevel => stock_level(db, w, d),
        }
    }
}

/// A row the load wrote: missing, the data and the transactions disagree.
fn get(db: &Db, k: &[u8]) -> Result<Vec<u8>> {
    db.get(k)?
        .ok_or_else(|| LabError::Data(format!("TPC-C row {k:02x?} is missing")))
}

fn customer(s: Scale, rng: &mut SmallRng) -> u32 {
    nurand(rng, 1023, 0, s.customers - 1)
}

fn new_order(db: &Db, s: Scale, rng: &mut SmallRng, w: u32, d: u32) -> Result<()> {
    let mut b = WriteBatch::default();
    get(db, &key(Table::Warehouse, &[w]))?;
    let dk = key(Table::District, &[w, d]);
    let mut dist = get(db, &dk)?;
    let o = field(&dist, 0) as u32;
    set_field(&mut dist, 0, i64::from(o) + 1);
    b.put(&dk, &dist);
    let c = customer(s, rng);
    get(db, &key(Table::Customer, &[w, d, c]))?;
    let lines = rng.gen_range(5..=15u32);
    // Stock rows this order already changed: an item named twice updates
    // its stock twice, not the stale row twice.
    let mut stock: std::collections::HashMap<Vec<u8>, Vec<u8>> = std::collections::HashMap::new();
    for l in 0..lines {
        let i = nurand(rng, 8191, 0, s.items - 1);
        get(db, &key(Table::Item, &[i]))?;
        // 1 % of lines are supplied by another warehouse (clause 2.4.1.5).
        let sw = if s.warehouses > 1 && rng.gen_ratio(1, 100) {
            rng.gen_range(0..s.warehouses)
        } else {
            w
        };
        let sk = key(Table::Stock, &[sw, i]);
        let mut st = match stock.remove(&sk) {
            Some(st) => st,
            None => get(db, &sk)?,
        };
        let qty = rng.gen_range(1..=10);
        let left = field(&st, 0) - qty;
        set_field(&mut st, 0, if left >= 10 { left } else { left + 91 });
        add_field(&mut st, 1, qty);
        add_field(&mut st, 2, 1);
        b.put(&sk, &st);
        stock.insert(sk, st);
        let ol = row(Table::OrderLine, &[i.into(), qty, 0, 0]);
        b.put(&key(Table::OrderLine, &[w, d, o, l]), &ol);
    }
    b.put(
        &key(Table::Order, &[w, d, o]),
        &row(Table::Order, &[c.into(), 0, lines.into()]),
    );
    b.put(
        &key(Table::NewOrder, &[w, d, o]),
        &row(Table::NewOrder, &[]),
    );
    b.put(
        &key(Table::OrderByCustomer, &[w, d, c, o]),
        &row(Table::OrderByCustomer, &[]),
    );
    Ok(db.write(b)?)
}

fn payment(db: &Db, s: Scale, rng: &mut SmallRng, w: u32, d: u32) -> Result<()> {
    let amount = rng.gen_range(100..=500_000);
    let mut b = WriteBatch::default();
    for k in [key(Table::Warehouse, &[w]), key(Table::District, &[w, d])] {
        let mut r = get(db, &k)?;
        add_field(&mut r, 1, amount);
        b.put(&k, &r);
    }
    let c = customer(s, rng);
    let ck = key(Table::Customer, &[w, d, c]);
    let mut cust = get(db, &ck)?;
    add_field(&mut cust, 0, -amount);
    add_field(&mut cust, 1, 1);
    b.put(&ck, &cust);
    let h = rng.gen::<u32>();
    b.put(
        &key(Table::History, &[w, d, c, h]),
        &row(Table::History, &[amount]),
    );
    Ok(db.write(b)?)
}

fn order_status(db: &Db, s: Scale, rng: &mut SmallRng, w: u32, d: u32) -> Result<()> {
    let c = customer(s, rng);
    get(db, &key(Table::Customer, &[w, d, c]))?;
    let (lo, hi) = (
        key(Table::OrderByCustomer, &[w, d, c]),
        key(Table::OrderByCustomer, &[w, d, c + 1]),
    );
    let newest = db.scan_dir((Included(&lo[..]), Excluded(&hi[..])), true, 1)?;
    if let Some(o) = newest.first().and_then(|(k, _)| last_id(k)) {
        get(db, &key(Table::Order, &[w, d, o]))?;
        order_lines(db, w, d, o)?;
    }
    Ok(())
}

fn order_lines(db: &Db, w: u32, d: u32, o: u32) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let (lo, hi) = (
        key(Table::OrderLine, &[w, d, o]),
        key(Table::OrderLine, &[w, d, o + 1]),
    );
    Ok(db.scan((Included(&lo[..]), Excluded(&hi[..])))?)
}

/// Delivers the oldest new order of every district of `w`, in one batch.
fn delivery(db: &Db, w: u32, carrier: i64) -> Result<()> {
    let mut b = WriteBatch::default();
    for d in 0..DISTRICTS {
        let (lo, hi) = (
            key(Table::NewOrder, &[w, d]),
            key(Table::NewOrder, &[w, d + 1]),
        );
        let Some((nk, _)) = db
            .scan_dir((Included(&lo[..]), Excluded(&hi[..])), false, 1)?
            .pop()
        else {
            continue;
        };
        let Some(o) = last_id(&nk) else {
            continue;
        };
        b.delete(&nk);
        let ok = key(Table::Order, &[w, d, o]);
        let mut order = get(db, &ok)?;
        set_field(&mut order, 1, carrier);
        b.put(&ok, &order);
        let mut total = 0;
        for (lk, mut line) in order_lines(db, w, d, o)? {
            total += field(&line, 1);
            set_field(&mut line, 3, 1);
            b.put(&lk, &line);
        }
        let ck = key(Table::Customer, &[w, d, field(&order, 0) as u32]);
        let mut cust = get(db, &ck)?;
        add_field(&mut cust, 0, total);
        add_field(&mut cust, 2, 1);
        b.put(&ck, &cust);
    }
    Ok(db.write(b)?)
}

/// Reads the stock of the distinct items of the district's last 20 orders
/// (TPC-C counts those below a threshold; only the reads matter here).
fn stock_level(db: &Db, w: u32, d: u32) -> Result<()> {
    let next = field(&get(db, &key(Table::District, &[w, d]))?, 0) as u32;
    let (lo, hi) = (
        key(Table::OrderLine, &[w, d, next.saturating_sub(20)]),
        key(Table::OrderLine, &[w, d, next]),
    );
    let items: BTreeSet<u32> = db
        .scan((Included(&lo[..]), Excluded(&hi[..])))?
        .iter()
        .map(|(_, v)| field(v, 0) as u32)
        .collect();
    for i in items {
        get(db, &key(Table::Stock, &[w, i]))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// With one item every order line names the same item: its stock row
    /// counts every line, not just the last (field 2: orders of it).
    #[test]
    fn an_item_named_twice_updates_its_stock_twice() {
        let dev = Box::new(flashkv_device::presets::open("dram-ssd").unwrap());
        let db = Db::open(dev, flashkv_engine::Options::default()).unwrap();
        let s = Scale {
            warehouses: 1,
            customers: 10,
            items: 1,
        };
        let mut rng = SmallRng::seed_from_u64(1);
        super::super::load(&db, s, &mut rng).unwrap();
        let sk = key(Table::Stock, &[0, 0]);
        let before = field(&db.get(&sk).unwrap().unwrap(), 2);
        new_order(&db, s, &mut rng, 0, 0).unwrap();
        let after = field(&db.get(&sk).unwrap().unwrap(), 2);
        let dk = key(Table::District, &[0, 0]);
        let o = field(&db.get(&dk).unwrap().unwrap(), 0) as u32 - 1;
        let lines = field(&db.get(&key(Table::Order, &[0, 0, o])).unwrap().unwrap(), 2);
        assert!(lines >= 5);
        assert_eq!(
            after - before,
            lines,
            "stock counted {} of {lines} lines",
            after - before
        );
    }
}
