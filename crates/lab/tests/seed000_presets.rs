//! Seed 000's drives as presets: every figure a description states
//! ("sr 1M = 23.5 MB/s", "rr 4K = 110 IOPS") is what the model gives at one
//! request outstanding over the whole device, as `flashkv profile --device
//! NAME --ops 2000` measures it; and every preset says where its numbers
//! come from (its source names seed 000 and marks what is assumed and
//! what is fitted).

use flashkv_device::{presets, BlockDevice};
use flashkv_lab::profile::{run, Pattern, ProfileSpec};
use flashkv_lab::seed000::DRIVES;

/// A figure as written in a description: pattern, block size, value, unit.
#[derive(Debug, PartialEq)]
struct Figure {
    pattern: Pattern,
    block: u64,
    value: f64,
    unit: String,
}

/// Every `<pattern> <size> = <number> <MB/s|IOPS>` in `text`.
fn figures(text: &str) -> Vec<Figure> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ';' || c == ':')
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(5)
        .filter(|w| w[2] == "=")
        .filter_map(|w| {
            let pattern = Pattern::parse(w[0])?;
            let block = match w[1].split_at(w[1].len() - 1) {
                (n, "K") => n.parse::<u64>().ok()? << 10,
                (n, "M") => n.parse::<u64>().ok()? << 20,
                _ => return None,
            };
            let value = w[3].replace(',', "").parse().ok()?;
            let unit = w[4].trim_end_matches(['.', ',']).to_string();
            Some(Figure {
                pattern,
                block,
                value,
                unit,
            })
        })
        .collect()
}

#[test]
fn the_figure_grammar_reads_what_descriptions_write() {
    let f = figures("Model at QD1: sr 1M = 23.5 MB/s; rr 4K = 2,099 IOPS. other = 3 x");
    assert_eq!(
        f,
        [
            Figure {
                pattern: Pattern::SeqRead,
                block: 1 << 20,
                value: 23.5,
                unit: "MB/s".into()
            },
            Figure {
                pattern: Pattern::RandRead,
                block: 4096,
                value: 2099.0,
                unit: "IOPS".into()
            },
        ]
    );
}

#[test]
fn every_description_figure_is_what_the_model_gives() {
    for drive in DRIVES {
        let spec = presets::get(drive.preset).unwrap();
        let stated = figures(&spec.description);
        assert!(
            stated.len() >= 4,
            "{}: the description states {} figures",
            drive.preset,
            stated.len()
        );
        assert!(
            spec.source.contains("seed 000") && spec.source.contains("ssumed"),
            "{}: the source names seed 000 and what is assumed",
            drive.preset
        );
        for f in stated {
            let mut dev = presets::open(drive.preset).unwrap();
            let span = dev.geometry().capacity / f.block * f.block;
            let s = ProfileSpec {
                pattern: f.pattern,
                block_size: f.block,
                ops: 2000,
                span,
                iodepth: 1,
                seed: 1,
            };
            let row = run(&mut dev, drive.preset, &s).unwrap();
            let model = match f.unit.as_str() {
                "MB/s" => row.mb_per_s,
                "IOPS" => row.iops,
                other => panic!("{}: unknown unit {other}", drive.preset),
            };
            // Descriptions round to two or three significant figures.
            assert!(
                (model / f.value - 1.0).abs() < 0.01,
                "{}: the description says {} {} = {} {}, the model gives {model:.2}",
                drive.preset,
                f.pattern,
                f.block,
                f.value,
                f.unit
            );
        }
    }
}
