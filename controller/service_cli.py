"""``craps-table run`` and ``craps-table demo``: build the table service from config and run it.

``craps-table run --config config/table.toml [--source sim | replay:PATH | usb:N | picamera2]``
    the long-running service (stops at the end of a replay, on SIGTERM / Ctrl-C, or after
    ``--max-verdicts``). Exit status 0; 2 for a bad config key or value, a bad ``--source``,
    a replay with no readable photo (``camera.errors.BadInputError``) or missing bus keys; 1 when
    the camera cannot be opened (``camera.errors.CameraUnavailable``) or the frame source fails, or when the camera has been lost for ``[health]
    restart_after_lost_s`` (a hung read: the watchdog pings stop too, so systemd restarts it).

``craps-table demo [--rolls N] [--wall-sensor]``
    the service on the simulated table (or, where the simulator is not available, a replay of
    dice photos) with a settlement subscriber in a thread; prints one line per roll and per
    settled wager and exits 0 after N verdicts. Needs no setup: state, journal and keys go to a
    temporary directory, the bus runs on ipc:// sockets in it. See controller/demo.py.
"""
from __future__ import annotations

import argparse
import functools
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from camera.argtypes import non_negative_int, positive_int
from camera.base import FrameError, FrameSource
from camera.errors import BadInputError, CameraUnavailable
from controller.config import ConfigError, TableConfig, load_config
from controller.lamps import GpioLampDriver, LampController, LampDriver, NullLampDriver
from controller.lifecycle import MotionDetector, RollLifecycle
from controller.service import TableService, check_store_not_behind_journal, journal_roll_ids, source_table_area
from controller.store import StateStore, StoreError

if TYPE_CHECKING:
    from controller.health import HealthMonitor

log = logging.getLogger("controller.service_cli")

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = REPO / "config" / "table.toml"

_PIN_FACTORIES = {
    "lgpio": ("gpiozero.pins.lgpio", "LGPIOFactory"),
    "rpigpio": ("gpiozero.pins.rpigpio", "RPiGPIOFactory"),
    "pigpio": ("gpiozero.pins.pigpio", "PiGPIOFactory"),
    "native": ("gpiozero.pins.native", "NativeFactory"),
    "mock": ("controller.mock_pins", "BoundedMockFactory"),  # MockFactory, with a bounded pin history
}


class SetupError(Exception):
    """Something the service needs cannot be built from config (exit status 2)."""


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Arguments of ``craps-table run`` / ``craps-table demo``."""
    if command == "demo":
        parser.add_argument("--rolls", type=positive_int, default=20, help="stop after N verdicts (default 20)")
        parser.add_argument("--seed", type=non_negative_int, default=None,
                            help="simulator seed, >= 0 (default from config)")
        parser.add_argument("--source", default=None,
                            help="frame source instead of the simulated table: sim[:SCENARIO] | replay:PATH | "
                                 "usb:N | picamera2[:N] (as craps-table run)")
        parser.add_argument("--config", type=Path, default=None,
                            help="table config (default: the shipped config/table.toml); its bus, "
                                 "state and lamp settings are replaced by temporary ones")
        parser.add_argument("--wall-sensor", action="store_true",
                            help="the simulated table has a far-wall strike sensor ([rules] wall_sensor): "
                                 "its strikes join the motion track in the far-wall decision")
        parser.add_argument("--verbose", action="store_true", help="log the service's work")
        return
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="table config TOML")
    parser.add_argument("--source", default=None,
                        help="frame source: sim[:SCENARIO] | replay:PATH | usb:N | picamera2[:N] "
                             "(default: [camera] source in the config)")
    parser.add_argument("--max-verdicts", type=positive_int, default=None, help="stop after N verdicts")
    parser.add_argument("--mode", default="table", choices=["table", "automated", "live"],
                        help="table: a dealt game; automated: rounds paced by the controller, the shaker "
                             "throws ([rounds], firmware bridge or a simulated MCU); live: stadium rounds, "
                             "bets close at the first motion")
    parser.add_argument("--max-rounds", type=positive_int, default=None,
                        help="stop after N rounds (needs --mode automated or live)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def run(command: str, args: argparse.Namespace) -> int:
    """Run the command; returns the exit status."""
    if command == "demo":
        from controller.demo import run_demo

        return run_demo(args)
    if getattr(args, "max_rounds", None) is not None and getattr(args, "mode", "table") == "table":
        # --mode table (the default) has no rounds to count: the limit would be ignored
        print("craps-table run: --max-rounds needs --mode automated or live (--mode table, the default, "
              "plays no rounds; use --max-verdicts to stop after N verdicts)", file=sys.stderr)
        return 2
    from controller.jsonlog import setup_logging

    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    setup_logging(args.log_level)  # JSON lines on stdout (journald); restored on return
    try:
        return _run_service(args)
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])


def _run_service(args: argparse.Namespace) -> int:
    """``craps-table run`` once logging is set up (see :func:`run`)."""
    try:
        cfg = load_config(args.config)
        source = open_frame_source(cfg, args.source)
    except (ConfigError, SetupError, ValueError, FrameError) as exc:
        print(f"craps-table run: {exc}", file=sys.stderr)
        # a camera that cannot be opened now may open after a restart (unplugged, still being
        # enumerated, held by another process): 1, which systemd restarts; a setup error is 2
        # (RestartPreventExitStatus=2 in deploy/craps-table.service)
        return 1 if isinstance(exc, CameraUnavailable) else 2
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set()) \
        if threading.current_thread() is threading.main_thread() else None
    from controller.sdnotify import SdNotify, Watchdog

    from controller.health import CameraGiveUp

    notify_error = notify_error_logger()
    notifier = SdNotify(on_error=notify_error)  # no-op unless started by systemd (Type=notify)
    watchdog = Watchdog.from_env(notifier, on_error=notify_error)
    give_up = CameraGiveUp(cfg.health.restart_after_lost_s)
    gave_up: list[float] = []  # seconds the camera had been lost when the service gave up
    try:
        try:
            metrics = build_metrics(cfg)
            service, publisher = build_service(cfg, source, metrics=metrics, health=True)
        except (SetupError, StoreError) as exc:
            print(f"craps-table run: {exc}", file=sys.stderr)
            source.close()
            return 2
        state = service.store.state
        notifier.ready(f"table {cfg.table.id}: shooter {state.shooter}, point {state.point or 'off'}")

        def on_health(status) -> None:  # systemctl status shows why the table is closed
            notifier.status(f"SAFE STATE: {', '.join(status.reasons)}" if status.safe_state
                            else f"table {cfg.table.id}: open")

        service.on_health = on_health
        rounds = None
        if getattr(args, "mode", "table") != "table":  # controller/automation.py
            from controller.automation import attach_for_run

            try:
                rounds = attach_for_run(service, cfg, source, args.mode)
            except RuntimeError as exc:
                print(f"craps-table run: --mode {args.mode}: {exc}", file=sys.stderr)
                service.close()
                publisher.close()
                source.close()
                return 2

        def should_stop() -> bool:
            now = time.monotonic()
            if give_up.update(now, service.health_status):  # a hung camera read never ends:
                if not gave_up:                              # no more pings, exit 1, restart
                    gave_up.append(give_up.lost_for(now))
                    log.error("camera lost for %.1f s ([health] restart_after_lost_s = %s): stopping "
                              "with exit status 1 for systemd to restart the service",
                              gave_up[0], cfg.health.restart_after_lost_s)
                return True
            watchdog.tick()  # from the loop that does the work: a hung loop stops the pings
            if rounds is not None and args.max_rounds is not None and rounds.rounds_done >= args.max_rounds:
                return True
            return stop.is_set()

        try:
            stats = service.run(source, max_verdicts=args.max_verdicts, should_stop=should_stop)
        except BadInputError as exc:  # e.g. a replay folder of only corrupt photos
            print(f"craps-table run: bad input: {exc}", file=sys.stderr)
            return 2
        except FrameError as exc:
            print(f"craps-table run: frame source failed: {exc}", file=sys.stderr)
            return 1
        except StoreError as exc:  # disk full, I/O error: the throw in hand was not committed
            log.error("state store failed, stopping: %s", exc)
            print(f"craps-table run: state store failed: {exc}", file=sys.stderr)
            try:
                publisher.publish("alarm", {"code": "store-fault", "message": str(exc)[:500]})
            except Exception:  # noqa: BLE001 - the bus may share the full disk: logged, not raised
                log.exception("could not publish the alarm store-fault")
            return 1
        except KeyboardInterrupt:
            stats = service.stats
        finally:
            notifier.stopping("closing: lamps off")
            service.close()
            publisher.close()
            source.close()
            if metrics is not None:
                metrics.close()
            notifier.close()
        log.info("stopped: %d frames, verdicts %s", stats.frames, stats.verdicts)
        return 1 if gave_up else 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def notify_error_logger(env=None) -> Callable[[Exception], None]:
    """The ``on_error`` of the service's :class:`controller.sdnotify.SdNotify` and watchdog: a
    bad ``NOTIFY_SOCKET`` / ``WATCHDOG_USEC`` or a notification that cannot be sent is logged
    (each distinct error once as a warning, repeats at debug level: a watchdog ping fails every
    half period) and the service carries on; it never crashes it."""
    import os

    env = os.environ if env is None else env
    seen: set[str] = set()

    def report(exc: Exception) -> None:
        text = f"{type(exc).__name__}: {exc}"
        level = logging.DEBUG if text in seen else logging.WARNING
        seen.add(text)
        log.log(level, "sd_notify failed (NOTIFY_SOCKET=%r, WATCHDOG_USEC=%r): %s",
                env.get("NOTIFY_SOCKET", ""), env.get("WATCHDOG_USEC", ""), text)

    return report


def open_frame_source(cfg: TableConfig, spec: str | None) -> FrameSource:
    """Open the frame source named by ``spec`` (``--source``) or by ``[camera]``.

    Replays are held long enough for ``[vision] still_frames``; cameras and the simulator are
    imported only when chosen.

    Raises:
        ValueError: a malformed spec; camera.base.FrameError: a replay path that is not usable;
        SetupError: the simulator is not available in this build.
    """
    from camera.sources import parse_source_spec

    cam = parse_source_spec(spec, cfg.camera) if spec else cfg.camera
    still = cfg.vision.still_frames
    if cam.source == "replay":
        from camera.replay import ReplaySource

        if cam.replay_path is None:
            raise ValueError("camera.replay_path: a replay needs a path (or --source replay:PATH)")
        return ReplaySource(cam.replay_path, fps=cam.replay_fps, hold_frames=still + 6, empty_frames=still + 4)
    if cam.source == "sim":
        try:
            from simulator.source import SimSource
        except ImportError as exc:
            raise SetupError(f"--source sim: the simulated table is not available in this build ({exc})") from None
        return SimSource(cam.sim_scenario, seed=cam.sim_seed, spare_dice=cam.sim_spare_dice)
    from camera.sources import open_source

    return open_source(cam)


def _source_die_side(source: object) -> float | None:
    """The die side in pixels a source knows (``SimSource.die_side_px``), else ``None``."""
    side = getattr(source, "die_side_px", None)
    side = side() if callable(side) else side
    try:
        return float(side) if side else None
    except (TypeError, ValueError):
        return None


def build_lamp_driver(cfg: TableConfig) -> LampDriver:
    """The lamp driver ``[lamps]`` names.

    Raises:
        SetupError: an unusable pin factory, pins, or the firmware bridge missing.
    """
    lamps = cfg.lamps
    if lamps.driver == "none":
        return NullLampDriver()
    if lamps.driver == "firmware":
        try:
            from firmware_bridge.lamps import FirmwareLampDriver
            from firmware_bridge.link import FirmwareLink
        except ImportError as exc:
            raise SetupError(f"lamps.driver = 'firmware': the firmware bridge is not available ({exc})") from None
        try:
            link = FirmwareLink(cfg.firmware).start()
            link.wait_up(2.0)  # not up in time: the service starts with the fault shown
        except Exception as exc:  # noqa: BLE001 - reported with the section that chose it
            raise SetupError(f"firmware.port {cfg.firmware.port!r}: {exc}") from exc
        return _LinkedLamps(FirmwareLampDriver(link), link)
    factory = None
    if lamps.pin_factory:
        import importlib

        module, name = _PIN_FACTORIES[lamps.pin_factory]
        try:
            factory = getattr(importlib.import_module(module), name)()
        except Exception as exc:  # noqa: BLE001 - missing library or not a Pi
            raise SetupError(f"lamps.pin_factory = {lamps.pin_factory!r}: {exc}") from exc
    try:
        return GpioLampDriver(lamps.pins, active_high=lamps.active_high, pwm=lamps.pwm,
                              flash_on_s=lamps.flash_on_s, flash_off_s=lamps.flash_off_s, pin_factory=factory)
    except Exception as exc:  # noqa: BLE001 - gpiozero errors name the pin
        raise SetupError(f"lamps.pins: {exc}") from exc


class _LinkedLamps:
    """A firmware lamp driver that also owns (and closes) its serial link."""

    def __init__(self, driver: LampDriver, link) -> None:
        self._driver, self._link = driver, link

    @property
    def link(self):
        """The firmware link (its input events feed the service)."""
        return self._link

    def set_lamp(self, name: str, mode: str, brightness: float = 1.0) -> None:
        """See :class:`controller.lamps.LampDriver`."""
        self._driver.set_lamp(name, mode, brightness)

    def close(self) -> None:
        """Lamps off, then the serial link closed."""
        try:
            self._driver.close()
        finally:
            self._link.close()


def build_publisher(cfg: TableConfig):
    """The bus publisher for ``[bus]``.

    Raises:
        SetupError: the bus keys are missing (the message says how to make them) or an
            endpoint cannot be bound.
    """
    from bus.keys import BusKeyError
    from bus.publisher import RollPublisher

    problem = missing_bus_keys(cfg.bus)
    if problem is not None:
        raise SetupError(problem)
    try:
        return RollPublisher(cfg.bus, cfg.table.id)
    except BusKeyError as exc:  # every file is there but one cannot be read
        raise SetupError(f"bus.keys_dir: {exc}; remake a damaged key set with `craps-table keys generate "
                         f"NAME --dir {cfg.bus.keys_dir} --force`") from None
    except Exception as exc:  # noqa: BLE001 - zmq / journal errors, reported with the section
        raise SetupError(f"bus: {type(exc).__name__}: {exc}") from exc


def missing_bus_keys(bus_cfg) -> str | None:
    """What is missing of the bus keys of ``bus_cfg`` (a ``bus.config.BusConfig``) and every
    step that makes it, in one message, so that one failed start tells the whole setup; ``None``
    when nothing is missing.

    The steps (bus/cli.py): the table's key set, ``craps-table keys generate TABLE_KEY --dir
    KEYS_DIR``, when a file of it is missing; the subscriber's key set put into the allow-list,
    ``craps-table keys generate SUBSCRIBER_KEY --dir KEYS_DIR --authorize`` (or ``keys
    authorize`` of its existing certificate), when the allow-list directory is missing.
    ``KEYS_DIR`` is the configured ``bus.keys_dir``.
    """
    from bus.keys import key_files

    keys_dir = Path(bus_cfg.keys_dir)
    table = key_files(keys_dir, bus_cfg.table_key)
    missing, steps = [], []
    absent = [p.name for p in (table.curve_public, table.curve_secret, table.sign_secret, table.sign_public)
              if not p.is_file()]
    if absent:
        missing.append(", ".join(absent))
        steps.append(f"`craps-table keys generate {bus_cfg.table_key} --dir {keys_dir}`")
    if not bus_cfg.allow_dir.is_dir():
        missing.append(f"the allow-list {bus_cfg.allow_dir}")
        sub = key_files(keys_dir, bus_cfg.subscriber_key)
        if sub.curve_public.is_file():
            step = f"`craps-table keys authorize {sub.curve_public} --dir {keys_dir}`"
        else:
            step = f"`craps-table keys generate {bus_cfg.subscriber_key} --dir {keys_dir} --authorize`"
        if bus_cfg.allow_dir != keys_dir / "authorized":
            step += f" (then copy {sub.curve_public} into bus.authorized_dir {bus_cfg.allow_dir})"
        steps.append(step)
    if not missing:
        return None
    return (f"bus.keys_dir {keys_dir}: missing {'; '.join(missing)}; make the keys with "
            + " and then ".join(steps))


def build_metrics(cfg: TableConfig):
    """The Prometheus metrics of ``[metrics]`` (serving over HTTP), or ``None`` without it.

    Raises:
        SetupError: the address or the port cannot be bound (the message names the key).
    """
    if cfg.metrics is None or not cfg.metrics.enabled:
        return None
    from controller.metrics import TableMetrics

    metrics = TableMetrics(fps_window_s=cfg.metrics.fps_window_s)
    try:
        metrics.serve(cfg.metrics)
    except OSError as exc:
        import errno
        import socket

        m = cfg.metrics
        if isinstance(exc, socket.gaierror) or exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
            where = f"metrics.addr {m.addr!r}"   # not an address, or not one of this host's
        else:
            where = f"metrics.port {m.port} (addr {m.addr!r})"  # in use, or below 1024
        raise SetupError(f"{where}: {exc}") from None
    return metrics


def build_health(cfg: TableConfig, source: object, *, bridge: bool) -> "HealthMonitor":
    """The health monitor of ``[health]`` for this table: the bridge is required only when the
    table has one (``lamps.driver = "firmware"``), and the frozen-camera check is off for a
    replay (it holds each photo for many identical frames by design)."""
    from camera.replay import ReplaySource
    from controller.health import HealthMonitor

    hc = cfg.health
    update = {"require_bridge": hc.require_bridge and bridge}
    if isinstance(source, ReplaySource):
        update["frozen_after_s"] = None
    return HealthMonitor(hc.model_copy(update=update))


def check_journal(store: StateStore, journal_path) -> None:
    """:func:`controller.service.check_store_not_behind_journal`, with a journal that cannot be
    read logged (the publisher, which opens it first, reports it).

    Raises:
        controller.store.StoreError: the store is behind the journal.
    """
    from bus.journal import JournalError

    try:
        check_store_not_behind_journal(store, journal_path)
    except JournalError as exc:
        log.warning("bus journal not checked against the store: %s", exc)


def build_service(cfg: TableConfig, source: FrameSource, *, publisher=None, lamp_driver: LampDriver | None = None,
                  reader=None, on_message=None, metrics=None, health=None) -> tuple[TableService, object]:
    """Build the :class:`TableService` for ``cfg`` (edges may be passed in, e.g. by tests).

    ``health``: a ``controller.health.HealthMonitor``, ``True`` for the one of ``[health]``
    (:func:`build_health`), or ``None`` (no safe-state supervision: the demo, unit tests).

    Returns:
        ``(service, publisher)``; the caller closes both (``service.close()`` turns the lamps
        off and closes the store).

    Raises:
        SetupError, controller.store.StoreError.
    """
    die_side = cfg.vision.die_side_px or _source_die_side(source)
    if reader is None:
        from vision.reader import read_dice

        reader = functools.partial(read_dice, expected_side_px=die_side or None, method=cfg.vision.reader)
    area = list(cfg.vision.table_area) or source_table_area(source)
    opened: list = []  # what this function opened, closed again if the start fails
    if publisher is None:
        publisher = build_publisher(cfg)
        opened.append(publisher)
    late_post: list = []
    try:
        driver = lamp_driver if lamp_driver is not None else build_lamp_driver(cfg)
        if lamp_driver is None:
            opened.append(driver)
        observer, closers = build_observer(cfg, source, area, table_command=_late_post(late_post), reader=reader)
        opened.extend(closers)
        store = StateStore(cfg.state.db)
        opened.append(store)
        check_journal(store, cfg.bus.journal_path)
    except BaseException:
        for thing in reversed(opened):  # nothing half-open is left behind
            close = thing if callable(thing) else thing.close
            try:
                close()
            except Exception:  # noqa: BLE001
                log.exception("error while closing after a failed start")
        raise
    v = cfg.vision
    service = TableService(
        table_id=cfg.table.id, store=store, publisher=publisher,
        lamps=LampController(driver, flash_s=cfg.lamps.flash_s, brightness=cfg.lamps.brightness),
        reader=reader,
        lifecycle=RollLifecycle(v.still_frames, v.rest_timeout_s, v.same_die_tolerance_px, v.still_s),
        motion=MotionDetector(area, threshold=v.motion_threshold, min_pixels=v.motion_min_pixels,
                              width=v.motion_width, die_side_px=die_side),
        policy=cfg.rules.build(), min_confidence=v.min_confidence, min_presence=v.min_presence,
        area=area, on_message=on_message, read_crop=v.read_crop, metrics=metrics,
        journalled_rolls=lambda after: journal_roll_ids(cfg.bus.journal_path, after),
        observe=observer, shooter_change=cfg.rules.load_profile().shooter_change,
        max_frame_gap_s=v.max_frame_gap_s)
    service.closers.extend(closers)
    stamps = getattr(publisher, "clock", None)   # the bus's stamp clock (bus/wallclock.py)
    if metrics is not None and hasattr(stamps, "add_step_listener"):
        stamps.add_step_listener(lambda step_s: metrics.clock_jump("wall"))
    late_post.append(service.post)   # the boxperson command socket's table commands
    link = getattr(driver, "link", None)
    if link is None and cfg.firmware is not None:
        try:
            link = open_input_link(cfg)  # lamps on GPIO, inputs (wall sensor, button) on the MCU
        except SetupError:
            service.close()
            if publisher in opened:
                publisher.close()
            raise
        service.closers.append(link.close)
    if health is True:
        health = build_health(cfg, source, bridge=link is not None)
    service.health = health or None
    service.live = type(source).__module__ in ("camera.usb", "camera.picamera2_source")  # newest frames only
    if link is not None:
        connect_firmware_inputs(link, service, require_bridge=cfg.health.require_bridge)
    connect_bus_health(publisher, service)
    return service, publisher


def connect_bus_health(publisher, service: TableService) -> None:
    """Feed the publisher's heartbeats to the service's health monitor (``service.health``,
    when it has one): each heartbeat the bus takes restarts ``[health] bus_timeout_s``, so an
    idle table (no roll for longer than the timeout) is not ``bus-silent``. A publisher without
    heartbeats (``add_heartbeat_listener``, e.g. a test's list) is left alone."""
    add = getattr(publisher, "add_heartbeat_listener", None)
    if add is None:
        return

    def on_heartbeat(sent: bool) -> None:
        if sent and service.health is not None:
            service.health.bus_traffic(time.monotonic())

    add(on_heartbeat)


def open_input_link(cfg: TableConfig):
    """The firmware link of ``[firmware]`` for its inputs alone (the lamps are not on the
    microcontroller): started, given up to 2 s to come up (else the service starts with the
    fault shown).

    Raises:
        SetupError: the bridge is not available or the port cannot be used.
    """
    try:
        from firmware_bridge.link import FirmwareLink
    except ImportError as exc:
        raise SetupError(f"[firmware]: the firmware bridge is not available ({exc})") from None
    try:
        link = FirmwareLink(cfg.firmware).start()
    except Exception as exc:  # noqa: BLE001 - reported with the key
        raise SetupError(f"firmware.port {cfg.firmware.port!r}: {exc}") from exc
    link.wait_up(2.0)
    return link


def connect_firmware_inputs(link, service: TableService, *, require_bridge: bool = True) -> None:
    """Feed the microcontroller's inputs to the service: the shooter button passes the dice
    (9 NYCRR 5324.52(i)(1), N.J.A.C. 13:69F-1.11(a)), far-wall strikes go to the irregularity
    detectors (5324.52(k)(2)(ii)) through a ``firmware_bridge.events.WallStrikeLog`` on the
    frame clock (the detectors count the strikes between the throw's start and its rest), the
    link going down or up raises or clears a fault, and every frame received from the
    microcontroller restarts ``[health] bridge_timeout_s`` (``HealthMonitor.bridge_traffic``).

    With a health monitor (``service.health``) the link is also a health input: the table is in
    its safe state (no roll accepted) while ``rolls_allowed`` is false (``[firmware]
    require_wall_sensor`` and the link or the sensor down) or, with ``require_bridge``
    (``[health]``), while the link is down."""
    from firmware_bridge.protocol import InputId

    observer = service.observe
    strikes = None
    if hasattr(observer, "use_strike_log"):
        from firmware_bridge.events import WallStrikeLog

        strikes = WallStrikeLog(link, clock=service.frame_clock)
        observer.use_strike_log(strikes)

    def on_event(ev) -> None:
        if ev.input == InputId.SHOOTER_BUTTON and ev.value == 1:
            service.post("shooter-button")
        elif ev.input == InputId.FAR_WALL_STRIKE and strikes is None and hasattr(observer, "wall_strike"):
            observer.wall_strike(ev.event_time or ev.host_time)

    def on_status(status) -> None:
        service.post("link", up=bool(status.up), reason=str(status.reason))
        if service.health is not None:
            import time

            ok = bool(status.rolls_allowed) and (bool(status.up) or not require_bridge)
            why = "" if ok else (str(status.reason) if not status.up else
                                 "far-wall sensor not working (firmware.require_wall_sensor)")
            service.health.bridge(time.monotonic(), ok, why or "firmware link down")

    def on_rx(_arrived: float) -> None:  # every frame from the MCU: [health] bridge_timeout_s
        if service.health is not None:
            service.health.bridge_traffic(time.monotonic())

    link.add_event_listener(on_event)
    link.add_link_listener(on_status)
    if hasattr(link, "add_rx_listener"):
        link.add_rx_listener(on_rx)


def _source_calibration(source: object):
    """A calibration from a source that knows its table (``SimSource.homography`` and
    ``table_zones``), else ``None``."""
    zones = getattr(source, "table_zones", None)
    hom = getattr(source, "homography", None)
    if not zones or hom is None:
        return None
    from camera.calibration import Calibration

    geometry = getattr(source, "geometry", None)
    die_mm = getattr(geometry, "die_size", None)
    kw = {"die_size_mm": float(die_mm)} if die_mm else {}
    height = getattr(source, "camera_height_mm", None)
    if height:
        kw["camera_height_mm"] = float(height)
    nadir = getattr(source, "camera_nadir_mm", None)
    if nadir is not None:
        kw["camera_nadir_mm"] = (float(nadir[0]), float(nadir[1]))
    return Calibration.from_homography(hom, zones, **kw)


def _source_objects(source: object) -> list:
    """The chip stacks a source knows are on the layout (``SimSource.chip_stacks``), as the
    irregularity detectors' table objects."""
    stacks = getattr(source, "chip_stacks", None) or []
    from controller.felt import TableObject

    out = []
    for st in stacks:
        try:
            out.append(TableObject(float(st["x_mm"]), float(st["y_mm"]), float(st["radius_mm"]),
                                   float(st["height_mm"])))
        except (KeyError, TypeError, ValueError):
            log.warning("chip stack %r of the source ignored (not x_mm, y_mm, radius_mm, height_mm)", st)
    return out


class AreaZones:
    """A throw observer seen through the table area: a die the observer puts in play whose
    centre is outside ``[vision] table_area`` is ``"outside"`` (used when there is no
    calibration, so the observer's detectors know no zones). Every other hook is passed on."""

    def __init__(self, observer, area) -> None:
        import numpy as np

        self._observer = observer
        self._area = np.asarray(area, dtype=np.float32).reshape(-1, 1, 2)

    def __call__(self, readings, frame):
        """The service's observe hook: the observer's observations, re-zoned by the area."""
        import cv2
        from dataclasses import replace

        observations, facts = self._observer(readings, frame)
        out = []
        for o in observations:
            c = (float(o.reading.centre[0]), float(o.reading.centre[1]))
            if o.zone == "playing" and cv2.pointPolygonTest(self._area, c, False) < 0:
                o = replace(o, zone="outside")
            out.append(o)
        return out, facts

    def __getattr__(self, name):
        return getattr(self._observer, name)


def _late_post(holder: list) -> Callable[..., None]:
    """``TableService.post`` of the service built after the command socket (``holder[0]``)."""
    def post(event: str, **details) -> None:
        if not holder:
            raise RuntimeError("the table service is not running yet")
        holder[0](event, **details)
    return post


def build_observer(cfg: TableConfig, source: FrameSource, area,
                   table_command: Callable[..., None] | None = None, reader=None) -> tuple[object, list]:
    """The irregularity detectors and boxperson calls of ``[rules]`` and ``[boxperson]``: a
    :class:`controller.throw_observer.ThrowObserver` with the calibration (``rules.calibration``
    or the source's own), a call registry, and the command server ``craps-table decide`` talks
    to. With ``rules.wall_sensor`` and a source that simulates the sensor
    (``SimSource.on_wall_strike``), its strikes go to the observer (a rig's sensor comes through
    the firmware bridge instead: :func:`connect_firmware_inputs`). ``reader`` (image ->
    readings; default ``read_dice`` at the configured die size) reads the dice cup's spares.

    Returns:
        ``(observer, closers)``: the service's observe hook, and what to close with it.

    Raises:
        SetupError: an unreadable calibration, or a command endpoint that cannot be bound.
    """
    from controller.boxperson import CONFIRM_S, CallRegistry, CommandServer
    from controller.throw_observer import ThrowObserver
    from vision.reader import read_dice, read_die_at

    if cfg.rules.calibration is not None:
        from camera.calibration import load_calibration

        try:
            calibration = load_calibration(cfg.rules.calibration)
        except Exception as exc:  # noqa: BLE001 - CalibrationError, OSError: named with the key
            raise SetupError(f"rules.calibration: {exc}") from None
    else:
        calibration = _source_calibration(source)
    registry = CallRegistry(timeout_s=cfg.boxperson.timeout_s)
    if reader is None:
        reader = functools.partial(read_dice, method=cfg.vision.reader,
                                   expected_side_px=cfg.vision.die_side_px or _source_die_side(source) or None)
    observer = ThrowObserver(cfg.rules.load_profile(), calibration=calibration, registry=registry,
                             objects=_source_objects(source),
                             wall_sensor=cfg.rules.wall_sensor, track=cfg.rules.track,
                             min_presence=cfg.vision.min_presence,
                             tolerances=cfg.rules.build_tolerances(),
                             reread=functools.partial(read_die_at, method=cfg.vision.reader),
                             read_spares=reader)
    if cfg.rules.wall_sensor and hasattr(source, "on_wall_strike"):
        source.on_wall_strike(observer.wall_strike)   # the simulated table's far-wall sensor
    hook = AreaZones(observer, area) if calibration is None and area else observer
    closers = []
    if cfg.boxperson.endpoint:
        curve = None
        if cfg.boxperson.curve:
            from bus.keys import key_files
            from controller.boxperson import CurveServerKeys

            secret = key_files(cfg.bus.keys_dir, cfg.bus.table_key).curve_secret
            if not secret.is_file():
                raise SetupError(f"boxperson.curve: the table's CURVE certificate {secret} is missing "
                                 f"(`craps-table keys generate {cfg.bus.table_key}`)")
            if not cfg.boxperson.authorized_dir.is_dir():
                raise SetupError(f"boxperson.authorized_dir: no such folder {cfg.boxperson.authorized_dir} "
                                 "(the boxperson consoles' public certificates)")
            from bus.keys import BusKeyError, check_allow_list

            try:
                check_allow_list(cfg.boxperson.authorized_dir)
            except BusKeyError as exc:
                raise SetupError(f"boxperson.authorized_dir: {exc}") from None
            curve = CurveServerKeys(secret, cfg.boxperson.authorized_dir)
        try:
            server = CommandServer(registry, cfg.boxperson.endpoint, curve=curve, table_command=table_command,
                                   confirm_s=CONFIRM_S if table_command is not None else None)
            server.start()
        except Exception as exc:  # noqa: BLE001 - zmq errors: named with the key
            raise SetupError(f"boxperson.endpoint {cfg.boxperson.endpoint!r}: {exc}") from None
        log.info("boxperson commands on %s", getattr(server, "endpoint", cfg.boxperson.endpoint))
        closers.append(server.close)
    return hook, closers
