//! A short tour of what exists: lazy arrays, eval from any thread, streams.
use ferrox::*;

fn main() -> Result<()> {
    let x = arange(0.0, 8.0, 1.0, DType::Float32)?;
    let y = ((&x * 2.0)? + 1.0)?;
    println!("x = {x}");
    println!("x * 2 + 1 = {y}");
    let z = exp(&negative(&x)?)?;
    let handle = std::thread::spawn(move || z.to_vec::<f32>());
    println!(
        "exp(-x) evaluated on another thread: {:?}",
        handle.join().expect("thread")?
    );
    println!("eye(3) = {}", eye(3, None, 0, DType::Int32)?);
    Ok(())
}
