//! Plugs a hare-cc controller into a quinn transport configuration; what matters is that
//! this builds with quinn's aws-lc-rs backend and without `ring`.

fn main() -> Result<(), hare_cc::SpecError> {
    let mut transport = quinn::TransportConfig::default();
    let spec: hare_cc::CcSpec = "cubic@linux-6".parse()?;
    transport.congestion_controller_factory(spec.factory());
    println!("{}", spec.label());
    Ok(())
}
