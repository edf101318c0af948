//! Runs the loop on its own thread and stops it on request.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::emulation_loop::{run_engine, EngineConfig, EngineReport, Ports};
use crate::error::{EmuError, Result};
use crate::wall_clock::RunClock;

/// The emulator thread of a running emulator, with its stop flag.
#[derive(Debug)]
pub struct EngineThread<P: Ports + Send + 'static> {
    stop: Arc<AtomicBool>,
    clock: RunClock,
    handle: Option<JoinHandle<Result<(EngineReport, P)>>>,
}

impl<P: Ports + Send + 'static> EngineThread<P> {
    /// Starts the loop on a new thread named `hare-emu`; link time starts now.
    pub fn spawn(mut ports: P, cfg: EngineConfig) -> Result<EngineThread<P>> {
        let stop = Arc::new(AtomicBool::new(false));
        let clock = RunClock::start();
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("hare-emu".into())
            .spawn(move || {
                let report = run_engine(&mut ports, &cfg, clock, &flag)?;
                Ok((report, ports))
            })
            .map_err(|e| EmuError::io("spawn emulator thread", e))?;
        Ok(EngineThread {
            stop,
            clock,
            handle: Some(handle),
        })
    }

    /// The run's clock (link time 0 = when the thread was started).
    pub fn clock(&self) -> RunClock {
        self.clock
    }

    /// True while the loop runs (false after it failed or stopped).
    pub fn is_running(&self) -> bool {
        self.handle.as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Stops the loop and returns its report and the ports.
    pub fn stop(mut self) -> Result<(EngineReport, P)> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| EmuError::config("emulator thread", "panicked"))?,
            None => Err(EmuError::config("emulator thread", "already stopped")),
        }
    }
}

impl<P: Ports + Send + 'static> Drop for EngineThread<P> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
