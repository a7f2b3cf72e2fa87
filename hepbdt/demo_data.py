"""Generator of the small sample ntuples shipped in ``data/`` for the demo and the tests.

It simulates, with NumPy's seeded ``Generator`` only, a toy of a Higgs-like search: a
signal resonance X(125 GeV) -> b b-bar with initial-state radiation, against a
non-resonant QCD-like dijet continuum and a ttbar-like background (two b quarks, W
decays to jets or to a lepton and a neutrino). A simple detector model smears the jets
(pt response below one, 10-25 % resolution, semileptonic b decays that lose a neutrino),
applies acceptance cuts and builds missing transverse momentum from the invisible and
mismeasured momentum. Each process is written with uproot to one ROOT file holding a
TTree ``Events`` with NanoAOD-like branches: event-level ones (``event``, ``run``,
``MET_pt``, ``HT``, ``genWeight`` with a few per cent negative weights, normalisation
constants, the true resonance mass for regression) and jagged object-level ones
(``Jet_*``, ``Lep_*``).

The output is reproducible: the same seed and sizes give the same arrays, and within one
uproot and zlib version the same bytes (the file UUIDs are derived from the seed and the
ROOT timestamps are fixed). ``data/README.md`` lists every branch with its units.
:func:`demo_folder` makes, once, the folder of hepbdt's cache in which an installed wheel's
``hepbdt demo`` finds the package's demo configuration beside these ntuples.
This module knows nothing about training; it only makes inputs.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import hashlib
import importlib.resources
import itertools
import json
import math
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from ._util import atomic_path, atomic_write_text
from ._version import __version__

__all__ = [
    "CACHE_ENV",
    "DEMO_CONFIG",
    "DEFAULT_N_BACKGROUND",
    "DEFAULT_N_SIGNAL",
    "DEFAULT_SEED",
    "FILE_NAMES",
    "LUMI",
    "PROCESSES",
    "RESONANCE_MASS",
    "RESONANCE_WIDTH",
    "SHIPPED_SHA256",
    "TREE_NAME",
    "XSEC",
    "cache_dir",
    "demo_config_text",
    "demo_folder",
    "generate",
    "generate_arrays",
    "main",
    "sculpting_arrays",
    "write_sculpting_sample",
]

DEFAULT_SEED = 20240607
DEFAULT_N_SIGNAL = 25_000
DEFAULT_N_BACKGROUND = (25_000, 25_000)
TREE_NAME = "Events"

PROCESSES = ("signal", "background_qcd", "background_ttbar")
FILE_NAMES = {process: f"{process}.root" for process in PROCESSES}

RESONANCE_MASS = 125.0  # GeV
RESONANCE_WIDTH = 1.0  # GeV; a toy width, larger than the Standard Model Higgs boson's

# Toy cross sections (pb) and integrated luminosity (pb^-1); not physical values, chosen
# so that a selection gives a small but visible signal over the background.
XSEC = {"signal": 1.0, "background_qcd": 150.0, "background_ttbar": 60.0}
LUMI = 140_000.0

# Event numbers are PROCESS_ID * _EVENT_OFFSET + 1, + 2, ...: unique across the files and
# below 2**24, so they survive a conversion to float32 exactly.
_PROCESS_ID = {"signal": 1, "background_qcd": 2, "background_ttbar": 3}
_EVENT_OFFSET = 1_000_000
_MAX_EVENTS = _EVENT_OFFSET - 1

# Per-event generator weights: |w| = _WEIGHT_SCALE * lognormal(0, 0.15), sign negative
# with the mean probability below (larger in events with more radiation, as at NLO).
_WEIGHT_SCALE = {"signal": 0.9, "background_qcd": 2.5, "background_ttbar": 1.6}
_NEGATIVE_FRACTION = {"signal": 0.02, "background_qcd": 0.05, "background_ttbar": 0.05}

# Detector acceptance.
_JET_PT_MIN = 20.0
_JET_ABS_ETA_MAX = 2.5
_LEP_PT_MIN = 10.0
_LEP_ABS_ETA_MAX = 2.4

# Flavour codes of truth partons (as PDG |id| of the quark, 0 for light and gluons).
_B, _C, _LIGHT = 5, 4, 0
_B_QUARK_MASS = 4.8
_TOP_MASS = 172.5
_W_MASS = 80.4

# NanoAOD-style reduced float precision (mantissa bits kept), for smaller files.
_MANTISSA_BITS = {"pt": 10, "eta": 12, "phi": 12, "mass": 8, "btag": 10, "met": 10}

_COMPRESSION_LEVEL = 1  # ZLIB; level 9 took 6.7 s of a 7 s generation for files no smaller
_BASKET_EVENTS = 10_000
_FIXED_ROOT_DATETIME = datetime.datetime(2024, 6, 7, 12, 0, 0)
_UUID_NAMESPACE = uuid.UUID("5d0c3b8e-5a43-4b8e-9b1a-0d6f3c7e2a11")


# --------------------------------------------------------------------------------------
# Four-vector helpers. A four-vector is an (n, 4) float64 array (E, px, py, pz).


def _four_vector(pt: np.ndarray, eta: np.ndarray, phi: np.ndarray, mass: np.ndarray):
    px = pt * np.cos(phi)
    py = pt * np.sin(phi)
    pz = pt * np.sinh(eta)
    energy = np.sqrt(px**2 + py**2 + pz**2 + mass**2)
    return np.stack([energy, px, py, pz], axis=1)


def _pt_eta_phi_mass(p4: np.ndarray):
    energy, px, py, pz = p4.T
    pt = np.hypot(px, py)
    eta = np.arcsinh(pz / np.maximum(pt, 1e-9))
    phi = np.arctan2(py, px)
    mass = np.sqrt(np.maximum(energy**2 - px**2 - py**2 - pz**2, 0.0))
    return pt, eta, phi, mass


def _invariant_mass(p4: np.ndarray) -> np.ndarray:
    energy, px, py, pz = p4.T
    return np.sqrt(np.maximum(energy**2 - px**2 - py**2 - pz**2, 0.0))


def _boost(p4: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Boost ``p4``, given in the rest frame of ``parent``, to the frame of ``parent``."""
    beta = parent[:, 1:] / parent[:, :1]
    beta2 = np.sum(beta**2, axis=1)
    gamma = 1.0 / np.sqrt(np.maximum(1.0 - beta2, 1e-12))
    beta_dot_p = np.sum(beta * p4[:, 1:], axis=1)
    gamma2 = np.where(beta2 > 0.0, (gamma - 1.0) / np.where(beta2 > 0, beta2, 1.0), 0.0)
    energy = gamma * (p4[:, 0] + beta_dot_p)
    momentum = p4[:, 1:] + (gamma2 * beta_dot_p + gamma * p4[:, 0])[:, None] * beta
    return np.column_stack([energy, momentum])


def _two_body_decay(
    rng: np.random.Generator,
    parent: np.ndarray,
    mass1: np.ndarray | float,
    mass2: np.ndarray | float,
    cos_theta: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Decay ``parent`` into two daughters, isotropically unless ``cos_theta`` is given."""
    n = len(parent)
    parent_mass = _invariant_mass(parent)
    mass1 = np.broadcast_to(np.asarray(mass1, dtype=np.float64), (n,))
    mass2 = np.broadcast_to(np.asarray(mass2, dtype=np.float64), (n,))
    lam = (parent_mass**2 - (mass1 + mass2) ** 2) * (parent_mass**2 - (mass1 - mass2) ** 2)
    momentum = np.sqrt(np.maximum(lam, 0.0)) / (2.0 * parent_mass)
    if cos_theta is None:
        cos_theta = rng.uniform(-1.0, 1.0, n)
    phi = rng.uniform(-np.pi, np.pi, n)
    sin_theta = np.sqrt(1.0 - cos_theta**2)
    direction = np.column_stack([sin_theta * np.cos(phi), sin_theta * np.sin(phi), cos_theta])
    p3 = momentum[:, None] * direction
    daughter1 = np.column_stack([np.sqrt(momentum**2 + mass1**2), p3])
    daughter2 = np.column_stack([np.sqrt(momentum**2 + mass2**2), -p3])
    return _boost(daughter1, parent), _boost(daughter2, parent)


def _produce(
    rng: np.random.Generator, mass: np.ndarray, pt_shape: float, pt_scale: float, y_sigma: float
) -> np.ndarray:
    """A system of the given masses with a gamma-distributed pt and Gaussian rapidity."""
    n = len(mass)
    pt = rng.gamma(pt_shape, pt_scale, n)
    rapidity = rng.normal(0.0, y_sigma, n)
    phi = rng.uniform(-np.pi, np.pi, n)
    transverse_mass = np.sqrt(mass**2 + pt**2)
    return np.column_stack(
        [
            transverse_mass * np.cosh(rapidity),
            pt * np.cos(phi),
            pt * np.sin(phi),
            transverse_mass * np.sinh(rapidity),
        ]
    )


# --------------------------------------------------------------------------------------
# Truth level: flat lists of partons and leptons, each with the index of its event.


class _Truth:
    """Flat truth objects of one process, accumulated per kind."""

    def __init__(self, n_events: int):
        self.n_events = n_events
        self.parton_event: list[np.ndarray] = []
        self.parton_p4: list[np.ndarray] = []
        self.parton_flavour: list[np.ndarray] = []
        self.lepton_event: list[np.ndarray] = []
        self.lepton_p4: list[np.ndarray] = []
        self.lepton_charge: list[np.ndarray] = []
        self.invisible_px = np.zeros(n_events)
        self.invisible_py = np.zeros(n_events)

    def add_partons(self, event: np.ndarray, p4: np.ndarray, flavour: np.ndarray | int):
        self.parton_event.append(event)
        self.parton_p4.append(p4)
        self.parton_flavour.append(np.broadcast_to(np.asarray(flavour), event.shape).copy())

    def add_leptons(self, event: np.ndarray, p4: np.ndarray, charge: np.ndarray):
        self.lepton_event.append(event)
        self.lepton_p4.append(p4)
        self.lepton_charge.append(charge)

    def add_invisible(self, event: np.ndarray, p4: np.ndarray):
        np.add.at(self.invisible_px, event, p4[:, 1])
        np.add.at(self.invisible_py, event, p4[:, 2])

    def partons(self):
        return (
            np.concatenate(self.parton_event),
            np.concatenate(self.parton_p4),
            np.concatenate(self.parton_flavour),
        )

    def leptons(self):
        if not self.lepton_event:
            return np.zeros(0, np.int64), np.zeros((0, 4)), np.zeros(0, np.int32)
        return (
            np.concatenate(self.lepton_event),
            np.concatenate(self.lepton_p4),
            np.concatenate(self.lepton_charge),
        )


def _add_radiation(rng: np.random.Generator, truth: _Truth, mean_jets: float) -> np.ndarray:
    """Initial-state radiation jets, power-law in pt; returns their number per event."""
    n_jets = rng.poisson(mean_jets, truth.n_events)
    event = np.repeat(np.arange(truth.n_events), n_jets)
    total = len(event)
    pt = 15.0 * rng.uniform(0.0, 1.0, total) ** (-1.0 / 2.5)
    eta = rng.normal(0.0, 1.8, total)
    phi = rng.uniform(-np.pi, np.pi, total)
    flavour = np.where(rng.uniform(0.0, 1.0, total) < 0.04, _B, _LIGHT)
    truth.add_partons(event, _four_vector(pt, eta, phi, np.zeros(total)), flavour)
    return n_jets


def _pair_mass(event: np.ndarray, p4: np.ndarray, n_events: int) -> np.ndarray:
    """Invariant mass of the two leading truth objects of each event.

    Leading means highest pt among those within the jet acceptance in |eta|, or among all
    of the event's objects where fewer than two are within it.
    """
    pt, eta, _, _ = _pt_eta_phi_mass(p4)
    inside = np.abs(eta) < _JET_ABS_ETA_MAX
    n_inside = np.bincount(event, weights=inside, minlength=n_events)
    # Objects outside the acceptance rank after all those inside it, where that matters.
    rank_key = np.where(inside | (n_inside[event] < 2), pt, pt - 1e9)
    order = np.lexsort((-rank_key, event))
    event, p4 = event[order], p4[order]
    counts = np.bincount(event, minlength=n_events)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    has_two = counts >= 2
    first = starts[has_two]
    mass = np.zeros(n_events)
    mass[has_two] = _invariant_mass(p4[first] + p4[first + 1])
    return mass


def _truth_signal(rng: np.random.Generator, n: int) -> tuple[_Truth, np.ndarray, np.ndarray]:
    truth = _Truth(n)
    # Breit-Wigner truncated at +-10 widths, by inverting its cumulative distribution.
    half_range = np.arctan(2.0 * 10.0)
    mass = RESONANCE_MASS + 0.5 * RESONANCE_WIDTH * np.tan(rng.uniform(-half_range, half_range, n))
    resonance = _produce(rng, mass, pt_shape=2.0, pt_scale=45.0, y_sigma=1.2)
    b1, b2 = _two_body_decay(rng, resonance, _B_QUARK_MASS, _B_QUARK_MASS)
    events = np.arange(n)
    truth.add_partons(events, b1, _B)
    truth.add_partons(events, b2, _B)
    n_radiation = _add_radiation(rng, truth, mean_jets=1.4)
    return truth, mass, n_radiation


def _truth_qcd(rng: np.random.Generator, n: int) -> tuple[_Truth, np.ndarray, np.ndarray]:
    truth = _Truth(n)
    # Falling, power-law dijet mass spectrum; t-channel-like forward-peaked decay angle
    # for half of the events, isotropic for the other half.
    mass = 55.0 * rng.uniform(0.0, 1.0, n) ** (-1.0 / 2.3)
    system = _produce(rng, mass, pt_shape=2.0, pt_scale=30.0, y_sigma=1.3)
    forward = 1.0 - 1.0 / (1.0 + rng.uniform(0.0, 1.0, n) * 19.0)
    cos_theta = np.where(
        rng.uniform(0.0, 1.0, n) < 0.35,
        forward * rng.choice([-1.0, 1.0], n),
        rng.uniform(-1.0, 1.0, n),
    )
    flavour_draw = rng.uniform(0.0, 1.0, n)
    flavour = np.select([flavour_draw < 0.45, flavour_draw < 0.6], [_B, _C], _LIGHT)
    quark_mass = np.where(flavour == _B, _B_QUARK_MASS, 0.0)
    q1, q2 = _two_body_decay(rng, system, quark_mass, quark_mass, cos_theta)
    events = np.arange(n)
    truth.add_partons(events, q1, flavour)
    truth.add_partons(events, q2, flavour)
    n_radiation = _add_radiation(rng, truth, mean_jets=1.3)
    parton_event, parton_p4, _ = truth.partons()
    return truth, _pair_mass(parton_event, parton_p4, n), n_radiation


def _truth_ttbar(rng: np.random.Generator, n: int) -> tuple[_Truth, np.ndarray, np.ndarray]:
    truth = _Truth(n)
    events = np.arange(n)
    mass = 2.0 * _TOP_MASS + 5.0 + rng.gamma(1.5, 50.0, n)
    system = _produce(rng, mass, pt_shape=2.0, pt_scale=30.0, y_sigma=1.0)
    top, antitop = _two_body_decay(rng, system, _TOP_MASS, _TOP_MASS)
    for parent, w_charge in ((top, 1), (antitop, -1)):
        b_quark, w_boson = _two_body_decay(rng, parent, _B_QUARK_MASS, _W_MASS)
        truth.add_partons(events, b_quark, _B)
        daughter1, daughter2 = _two_body_decay(rng, w_boson, 0.0, 0.0)
        # W -> e nu or mu nu (tau decays folded in), otherwise W -> q q-bar'.
        leptonic = rng.uniform(0.0, 1.0, n) < 0.22
        truth.add_leptons(events[leptonic], daughter1[leptonic], np.full(leptonic.sum(), w_charge, np.int32))
        truth.add_invisible(events[leptonic], daughter2[leptonic])
        hadronic = ~leptonic
        charm = rng.uniform(0.0, 1.0, hadronic.sum()) < 0.5
        truth.add_partons(events[hadronic], daughter1[hadronic], np.where(charm, _C, _LIGHT))
        truth.add_partons(events[hadronic], daughter2[hadronic], _LIGHT)
    n_radiation = _add_radiation(rng, truth, mean_jets=0.5)
    parton_event, parton_p4, _ = truth.partons()
    return truth, _pair_mass(parton_event, parton_p4, n), n_radiation


_TRUTH = {
    "signal": _truth_signal,
    "background_qcd": _truth_qcd,
    "background_ttbar": _truth_ttbar,
}


# --------------------------------------------------------------------------------------
# Detector level.


def _round_mantissa(values: np.ndarray, bits: int) -> np.ndarray:
    """float32 values rounded to ``bits`` mantissa bits, as NanoAOD stores them."""
    as_int = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    drop = np.uint32(23 - bits)
    half = np.uint32(1) << (drop - np.uint32(1))
    mask = ~((np.uint32(1) << drop) - np.uint32(1))
    return ((as_int + half) & mask).view(np.float32)


def _jet_response(pt: np.ndarray, abs_eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean jet pt response and relative resolution (noise, stochastic, constant terms)."""
    safe_pt = np.maximum(pt, 1.0)
    mean = 0.99 - 0.35 / np.sqrt(safe_pt) - 0.03 * abs_eta / _JET_ABS_ETA_MAX
    resolution = np.sqrt((5.0 / safe_pt) ** 2 + 0.85**2 / safe_pt + 0.05**2)
    return mean, resolution


def _btag(rng: np.random.Generator, flavour: np.ndarray) -> np.ndarray:
    n = len(flavour)
    score = np.where(
        flavour == _B,
        rng.beta(4.0, 1.3, n),
        np.where(flavour == _C, rng.beta(1.5, 2.2, n), rng.beta(0.6, 4.5, n)),
    )
    return score


def _reconstruct(rng: np.random.Generator, truth: _Truth) -> dict[str, np.ndarray]:
    """Smear truth partons into jets and leptons; build MET and HT. Flat object arrays."""
    parton_event, parton_p4, flavour = truth.partons()
    visible_fraction, invisible_px, invisible_py, leptons = _semileptonic_b_decays(
        rng, truth, parton_event, parton_p4, flavour
    )
    lepton_event, lepton_p4, lepton_charge = leptons
    jets, visible_pt, phi = _smear_jets(rng, parton_p4, visible_fraction, flavour)
    missing_px, missing_py = _missing_momentum(
        rng, invisible_px, invisible_py, parton_event, visible_pt, jets["Jet_pt"], phi
    )
    # Round to the stored precision before the cuts, so stored values pass them.
    jets = {
        name: _round_mantissa(values, _MANTISSA_BITS[name.removeprefix("Jet_")])
        for name, values in jets.items()
    }
    jet_selected = (jets["Jet_pt"] > _JET_PT_MIN) & (np.abs(jets["Jet_eta"]) < _JET_ABS_ETA_MAX)
    lepton_pt, lepton_eta, lepton_phi, lepton_selected = _reconstruct_leptons(rng, lepton_p4)
    return {
        "jet_event": parton_event[jet_selected],
        **{name: values[jet_selected] for name, values in jets.items()},
        "lepton_event": lepton_event[lepton_selected],
        "Lep_pt": lepton_pt[lepton_selected],
        "Lep_eta": lepton_eta[lepton_selected],
        "Lep_phi": lepton_phi[lepton_selected],
        "Lep_charge": lepton_charge[lepton_selected].astype(np.int32),
        "MET_pt": np.hypot(missing_px, missing_py),
        "MET_phi": np.arctan2(missing_py, missing_px),
    }


def _semileptonic_b_decays(
    rng: np.random.Generator,
    truth: _Truth,
    parton_event: np.ndarray,
    parton_p4: np.ndarray,
    flavour: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Visible parton fractions, invisible px and py, and the leptons with soft ones added.

    In semileptonic b decays a neutrino takes a fraction of the quark's momentum, and
    sometimes the soft lepton is energetic and isolated enough to be reconstructed.
    """
    n_partons = len(parton_event)
    lepton_event, lepton_p4, lepton_charge = truth.leptons()
    invisible_px = truth.invisible_px.copy()
    invisible_py = truth.invisible_py.copy()
    semileptonic = (flavour == _B) & (rng.uniform(0.0, 1.0, n_partons) < 0.2)
    neutrino_fraction = np.where(semileptonic, rng.uniform(0.05, 0.4, n_partons), 0.0)
    lepton_fraction = rng.uniform(0.05, 0.3, n_partons)
    visible_fraction = 1.0 - neutrino_fraction - np.where(semileptonic, lepton_fraction, 0.0)
    np.add.at(invisible_px, parton_event, neutrino_fraction * parton_p4[:, 1])
    np.add.at(invisible_py, parton_event, neutrino_fraction * parton_p4[:, 2])
    soft_lepton = semileptonic & (rng.uniform(0.0, 1.0, n_partons) < 0.15)
    if soft_lepton.any():
        soft_p4 = lepton_fraction[soft_lepton, None] * parton_p4[soft_lepton]
        soft_charge = rng.choice(np.array([-1, 1], dtype=np.int32), soft_lepton.sum())
        lepton_event = np.concatenate([lepton_event, parton_event[soft_lepton]])
        lepton_p4 = np.concatenate([lepton_p4, soft_p4])
        lepton_charge = np.concatenate([lepton_charge, soft_charge])
    # A non-isolated soft lepton that fails the selection is clustered into the jet.
    visible_fraction = np.where(
        semileptonic & ~soft_lepton, visible_fraction + lepton_fraction, visible_fraction
    )
    return visible_fraction, invisible_px, invisible_py, (lepton_event, lepton_p4, lepton_charge)


def _smear_jets(
    rng: np.random.Generator, parton_p4: np.ndarray, visible_fraction: np.ndarray, flavour: np.ndarray
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Unrounded ``Jet_*`` arrays through the detector response; also visible pt and parton phi."""
    n_partons = len(parton_p4)
    true_pt, eta, phi, _ = _pt_eta_phi_mass(parton_p4)
    visible_pt = true_pt * visible_fraction
    jet_mass_fraction = 0.04 + rng.gamma(2.0, 0.03, n_partons)
    mean, resolution = _jet_response(visible_pt, np.abs(eta))
    response = np.maximum(rng.normal(mean, resolution), 0.05)
    jet_pt = visible_pt * response
    jet_eta = eta + rng.normal(0.0, 0.02, n_partons)
    jet_phi = np.mod(phi + rng.normal(0.0, 0.02, n_partons) + np.pi, 2.0 * np.pi) - np.pi
    jet_mass = visible_pt * jet_mass_fraction * response * rng.normal(1.0, 0.1, n_partons)
    jet_mass = np.abs(jet_mass)
    jet_btag = _btag(rng, flavour)
    jets = {
        "Jet_pt": jet_pt,
        "Jet_eta": jet_eta,
        "Jet_phi": jet_phi,
        "Jet_mass": jet_mass,
        "Jet_btag": jet_btag,
    }
    return jets, visible_pt, phi


def _missing_momentum(
    rng: np.random.Generator,
    invisible_px: np.ndarray,
    invisible_py: np.ndarray,
    parton_event: np.ndarray,
    visible_pt: np.ndarray,
    jet_pt: np.ndarray,
    phi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Missing px and py: invisible momentum, mismeasured jets and soft unclustered energy."""
    n = len(invisible_px)
    missing_px = invisible_px.copy()
    missing_py = invisible_py.copy()
    np.add.at(missing_px, parton_event, (visible_pt - jet_pt) * np.cos(phi))
    np.add.at(missing_py, parton_event, (visible_pt - jet_pt) * np.sin(phi))
    sum_et = np.bincount(parton_event, weights=visible_pt, minlength=n)
    soft_sigma = np.sqrt(8.0**2 + 0.25 * sum_et)
    missing_px += rng.normal(0.0, 1.0, n) * soft_sigma
    missing_py += rng.normal(0.0, 1.0, n) * soft_sigma
    return missing_px, missing_py


def _reconstruct_leptons(
    rng: np.random.Generator, lepton_p4: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Smeared, rounded lepton pt, eta and phi, and which leptons pass the selection."""
    bits = _MANTISSA_BITS
    lepton_pt, lepton_eta, lepton_phi, _ = _pt_eta_phi_mass(lepton_p4)
    n_leptons = len(lepton_p4)
    lepton_pt = _round_mantissa(lepton_pt * rng.normal(1.0, 0.02, n_leptons), bits["pt"])
    lepton_eta = _round_mantissa(lepton_eta, bits["eta"])
    lepton_phi = _round_mantissa(lepton_phi, bits["phi"])
    lepton_selected = (
        (lepton_pt > _LEP_PT_MIN)
        & (np.abs(lepton_eta) < _LEP_ABS_ETA_MAX)
        & (rng.uniform(0.0, 1.0, n_leptons) < 0.92)
    )
    return lepton_pt, lepton_eta, lepton_phi, lepton_selected


def _pt_ordered(event: np.ndarray, pt: np.ndarray, n_events: int):
    """Order that sorts objects by event, then by decreasing pt; and counts per event."""
    order = np.lexsort((-pt, event))
    return order, np.bincount(event, minlength=n_events)


def _generator_weights(rng: np.random.Generator, process: str, n_radiation: np.ndarray) -> np.ndarray:
    n = len(n_radiation)
    magnitude = _WEIGHT_SCALE[process] * rng.lognormal(0.0, 0.15, n)
    # More radiation, more negative weights; normalised so the mean fraction is as set.
    propensity = 0.6 + 0.4 * n_radiation / max(float(n_radiation.mean()), 1e-9)
    probability = np.clip(_NEGATIVE_FRACTION[process] * propensity, 0.0, 0.5)
    sign = np.where(rng.uniform(0.0, 1.0, n) < probability, -1.0, 1.0)
    return (sign * magnitude).astype(np.float32)


def _process_arrays(rng: np.random.Generator, process: str, n: int) -> dict[str, np.ndarray]:
    """Event-level arrays and flat object arrays (with counts) of one process."""
    truth, true_mass, n_radiation = _TRUTH[process](rng, n)
    reco = _reconstruct(rng, truth)
    gen_weight = _generator_weights(rng, process, n_radiation)

    jet_order, n_jet = _pt_ordered(reco["jet_event"], reco["Jet_pt"], n)
    lep_order, n_lep = _pt_ordered(reco["lepton_event"], reco["Lep_pt"], n)
    bits = _MANTISSA_BITS
    jets = {name: reco[name][jet_order] for name in reco if name.startswith("Jet_")}
    leptons = {name: reco[name][lep_order] for name in reco if name.startswith("Lep_")}
    # HT from the stored (rounded) jet pts, so that it equals their sum in float32 up to
    # the order of summation.
    ht = np.bincount(np.repeat(np.arange(n), n_jet), weights=jets["Jet_pt"].astype(np.float64), minlength=n)
    event_offset = _PROCESS_ID[process] * _EVENT_OFFSET
    events = {
        "run": np.ones(n, dtype=np.uint32),
        "event": np.arange(event_offset + 1, event_offset + n + 1, dtype=np.uint64),
        "nJet": n_jet.astype(np.int32),
        "nLep": n_lep.astype(np.int32),
        "HT": _round_mantissa(ht, bits["pt"]),
        "MET_pt": _round_mantissa(reco["MET_pt"], bits["met"]),
        "MET_phi": _round_mantissa(reco["MET_phi"], bits["phi"]),
        "genWeight": gen_weight,
        "xsec": np.full(n, XSEC[process], dtype=np.float32),
        "lumi": np.full(n, LUMI, dtype=np.float32),
        # fsum is exactly rounded, so the sum does not depend on NumPy's summation order.
        "sumGenWeight": np.full(n, math.fsum(gen_weight.tolist())),
        "true_mass": true_mass.astype(np.float32),
    }
    return {**events, **jets, **leptons}


def _check_sizes(n_signal: int, n_background: Sequence[int]) -> tuple[int, int]:
    if len(n_background) != 2:
        raise ValueError(f"n_background must hold two sizes (QCD, ttbar), got {tuple(n_background)!r}")
    for name, value in (
        ("n_signal", n_signal),
        ("n_background", n_background[0]),
        ("n_background", n_background[1]),
    ):
        if not 1 <= int(value) <= _MAX_EVENTS:
            raise ValueError(f"{name} must be between 1 and {_MAX_EVENTS}, got {value!r}")
    return int(n_background[0]), int(n_background[1])


def generate_arrays(
    seed: int = DEFAULT_SEED,
    n_signal: int = DEFAULT_N_SIGNAL,
    n_background: Sequence[int] = DEFAULT_N_BACKGROUND,
) -> dict[str, dict[str, np.ndarray]]:
    """Simulate the three processes in memory.

    Parameters
    ----------
    seed : int
        Seed of the NumPy ``SeedSequence``; each process draws from its own child
        stream, so changing one process's size leaves the others unchanged.
    n_signal : int
        Number of signal events (at most 999,999).
    n_background : (int, int)
        Numbers of QCD-like and ttbar-like events.

    Returns
    -------
    dict
        ``{process: {branch: array}}`` for the processes in ``PROCESSES``. Event-level
        arrays have shape (n_events,); object-level ones (``Jet_*``, ``Lep_*``) are flat,
        shape (sum of ``nJet``) or (sum of ``nLep``), ordered by event and then by
        decreasing pt. Dtypes are those written to the files (see ``data/README.md``).
    """
    n_qcd, n_ttbar = _check_sizes(n_signal, n_background)
    sizes = {"signal": int(n_signal), "background_qcd": n_qcd, "background_ttbar": n_ttbar}
    children = np.random.SeedSequence(seed).spawn(len(PROCESSES))
    return {
        process: _process_arrays(np.random.default_rng(child), process, sizes[process])
        for process, child in zip(PROCESSES, children, strict=True)
    }


# --------------------------------------------------------------------------------------
# Writing.


@contextlib.contextmanager
def _fixed_root_timestamps() -> Iterator[None]:
    """Make uproot stamp every key and directory with one fixed date.

    uproot writes the current time into the TFile, TDirectory and TKey headers and offers
    no option to set it; every such stamp goes through ``uproot._util.datetime_to_code``,
    which this replaces for the duration of the block (not thread-safe). If a future
    uproot lacks that function the files are still written, only not byte-reproducible.
    """
    import uproot._util

    original = getattr(uproot._util, "datetime_to_code", None)
    if original is None:
        yield
        return
    fixed_code = original(_FIXED_ROOT_DATETIME)
    uproot._util.datetime_to_code = lambda _datetime: fixed_code
    try:
        yield
    finally:
        uproot._util.datetime_to_code = original


def _uuid_function(seed: int, process: str):
    counter = itertools.count()
    return lambda: uuid.uuid5(_UUID_NAMESPACE, f"{process}:{seed}:{next(counter)}")


def _write_tree(path: Path, arrays: dict[str, np.ndarray], seed: int, process: str) -> None:
    import awkward as ak
    import uproot

    n_events = len(arrays["event"])
    event_level = {
        name: value
        for name, value in arrays.items()
        if not name.startswith(("Jet_", "Lep_")) and name not in ("nJet", "nLep")
    }
    with atomic_path(path, temporary_name=path.name + ".tmp") as temporary:
        with (
            _fixed_root_timestamps(),
            uproot.recreate(
                temporary,
                compression=uproot.ZLIB(_COMPRESSION_LEVEL),
                uuid_function=_uuid_function(seed, process),
            ) as root_file,
        ):
            jet_starts = np.concatenate([[0], np.cumsum(arrays["nJet"])])
            lep_starts = np.concatenate([[0], np.cumsum(arrays["nLep"])])
            tree = None
            for start in range(0, n_events, _BASKET_EVENTS):
                stop = min(start + _BASKET_EVENTS, n_events)
                chunk = {name: value[start:stop] for name, value in event_level.items()}
                jet_slice = slice(jet_starts[start], jet_starts[stop])
                lep_slice = slice(lep_starts[start], lep_starts[stop])
                chunk["Jet"] = ak.zip(
                    {
                        name[len("Jet_") :]: ak.unflatten(arrays[name][jet_slice], arrays["nJet"][start:stop])
                        for name in arrays
                        if name.startswith("Jet_")
                    }
                )
                chunk["Lep"] = ak.zip(
                    {
                        name[len("Lep_") :]: ak.unflatten(arrays[name][lep_slice], arrays["nLep"][start:stop])
                        for name in arrays
                        if name.startswith("Lep_")
                    }
                )
                if tree is None:
                    tree = root_file.mktree(
                        TREE_NAME,
                        {name: _branch_type(value) for name, value in chunk.items()},
                        title=f"hepbdt demo sample: {process}",
                    )
                tree.extend(chunk)


def _branch_type(value):
    import awkward as ak

    if isinstance(value, ak.Array):
        return value.type
    return value.dtype


def generate(
    output_dir: str | os.PathLike,
    seed: int = DEFAULT_SEED,
    n_signal: int = DEFAULT_N_SIGNAL,
    n_background: Sequence[int] = DEFAULT_N_BACKGROUND,
) -> dict[str, Path]:
    """Simulate the three processes and write one ROOT file per process.

    Parameters
    ----------
    output_dir : path
        Directory for the files; created if missing. Existing files of the same names
        are replaced (each is written to a temporary name first, then renamed).
    seed, n_signal, n_background
        As for :func:`generate_arrays`.

    Returns
    -------
    dict
        ``{process: path}`` for ``signal``, ``background_qcd`` and ``background_ttbar``;
        each file holds one TTree named ``Events``.
    """
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    samples = generate_arrays(seed=seed, n_signal=n_signal, n_background=n_background)
    paths = {}
    for process, arrays in samples.items():
        path = output_dir / FILE_NAMES[process]
        _write_tree(path, arrays, seed, process)
        paths[process] = path
    return paths


# --------------------------------------------------------------------------------------
# A toy for mass decorrelation studies: flat trees, no detector simulation.

SCULPTING_FEATURES = ("mjj", "tau21", "balance", "width", "noise")
SCULPTING_MASS_RANGE = (50.0, 300.0)  # GeV


def sculpting_arrays(n_signal: int = 20_000, n_background: int = 40_000,
                     seed: int = DEFAULT_SEED) -> dict[str, np.ndarray]:
    """A sample whose best discriminants sculpt the background mass (one flat table).

    The background mass ``mjj`` falls exponentially over 50-300 GeV, the signal's peaks at
    125 GeV (12 GeV wide). ``tau21`` grows with the mass in both classes (0.002 per GeV)
    and is 0.12 higher for signal at any mass: it discriminates, but a cut on it alone
    selects heavy background; ``mjj`` itself discriminates most and sculpts most.
    ``balance`` and ``width`` are shifted for signal (by 0.6 and 0.4 standard deviations)
    and carry no mass information in either class; ``noise`` carries nothing. Training on
    everything sculpts; training without ``mjj`` and ``tau21`` does not, but loses
    rejection; a decorrelated training on everything can use ``tau21`` relative to ``mjj``.

    Returns ``{"mjj", "tau21", "balance", "width", "noise": float32 (n,), "label": int32
    (1 signal, 0 background), "weight": float32 (all near 1, a few per cent spread),
    "event": int64}``, signal events first.
    """
    if n_signal < 1 or n_background < 1:
        raise ValueError(f"need at least one signal and one background event; got {n_signal} "
                         f"and {n_background}")
    rng = np.random.default_rng(seed)
    lo, hi = SCULPTING_MASS_RANGE
    # background: exp(-(m - lo) / 60 GeV) truncated to [lo, hi], by inversion
    u = rng.random(n_background)
    span = 1.0 - math.exp(-(hi - lo) / 60.0)
    m_bkg = lo - 60.0 * np.log1p(-u * span)
    m_sig = np.clip(rng.normal(125.0, 12.0, n_signal), lo, hi)
    mass = np.concatenate([m_sig, m_bkg])
    label = np.concatenate([np.ones(n_signal, np.int32), np.zeros(n_background, np.int32)])
    n = mass.size
    signal = label == 1
    tau21 = 0.25 + 0.002 * mass + 0.12 * signal + rng.normal(0.0, 0.1, n)
    balance = rng.normal(0.0, 1.0, n) + 0.6 * signal
    width = rng.normal(0.0, 1.0, n) + 0.4 * signal
    noise = rng.random(n)
    weight = rng.normal(1.0, 0.03, n)
    return {"mjj": mass.astype(np.float32), "tau21": tau21.astype(np.float32),
            "balance": balance.astype(np.float32), "width": width.astype(np.float32),
            "noise": noise.astype(np.float32), "label": label,
            "weight": weight.astype(np.float32), "event": np.arange(1, n + 1, dtype=np.int64)}


def write_sculpting_sample(output_dir: str | os.PathLike, n_signal: int = 20_000,
                           n_background: int = 40_000, seed: int = DEFAULT_SEED
                           ) -> dict[str, Path]:
    """Write :func:`sculpting_arrays` as ``signal.root`` and ``background.root`` (TTree
    ``Events``: the features, ``weight`` and ``event``); returns {class: path}."""
    import uproot

    arrays = sculpting_arrays(n_signal, n_background, seed)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, label in (("signal", 1), ("background", 0)):
        mine = arrays["label"] == label
        branches = {k: v[mine] for k, v in arrays.items() if k != "label"}
        path = output_dir / f"{name}.root"
        with atomic_path(path, temporary_name=path.name + ".tmp") as temporary, \
                _fixed_root_timestamps(), \
                uproot.recreate(temporary, compression=uproot.ZLIB(_COMPRESSION_LEVEL),
                                uuid_function=_uuid_function(seed, name)) as root_file:
            # mktree: uproot 5.7 writes root_file[name] = arrays as an RNTuple
            tree = root_file.mktree(TREE_NAME, {k: v.dtype for k, v in branches.items()},
                                    title=f"hepbdt sculpting sample: {name}")
            tree.extend(branches)
        paths[name] = path
    return paths


# --------------------------------------------------------------------------------------
# The demo folder: the demo configuration beside the three ntuples, made on first use.
#
# An installed wheel holds neither data/ nor analyses/ of the repository; it holds the
# demo configuration (hepbdt/demo/demo.toml, its sample files relative to its own folder)
# and this generator. `hepbdt demo` outside a checkout writes both into the demo folder of
# hepbdt's cache the first time and reuses it afterwards.

CACHE_ENV = "HEPBDT_CACHE"
DEMO_CONFIG = "demo.toml"
_DEMO_MANIFEST = "demo-files.json"
_DEMO_MANIFEST_FORMAT = "hepbdt-demo-files"

#: SHA-256 of the files :func:`generate` writes with the default seed and sizes on the
#: stack that wrote the repository's data/ (uproot 5.7.7, zlib 1.2.13; see
#: tests/test_demo_data.py). Another uproot or zlib writes the same arrays in other bytes,
#: so a demo folder is checked against the hashes it recorded when it was made, and these
#: only say whether its files are the repository's (tests/test_packaging.py keeps them).
SHIPPED_SHA256 = {
    "signal.root": "3993226fdc1c74c56a0776635d1304bcc0fb77dad5e1cf74bbbb3ceff709e569",
    "background_qcd.root": "fb23297ae6bb86f2381e56baa4bb96d14ee485dd3cd5574411101f591733d2de",
    "background_ttbar.root": "2abf91a5c15af3dadbf1852a0c5f09d8f729b31781e1b4c2aeb40ca4959b4fbe",
}


def cache_dir() -> Path:
    """hepbdt's cache folder: ``$HEPBDT_CACHE``, else ``$XDG_CACHE_HOME/hepbdt`` (an
    absolute one, as the XDG specification asks), else ``~/.cache/hepbdt``."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "hepbdt"
    return Path.home() / ".cache" / "hepbdt"


def demo_config_text() -> str:
    """The demo configuration shipped in the package (``hepbdt/demo/demo.toml``)."""
    return importlib.resources.files(__package__).joinpath("demo", DEMO_CONFIG).read_text("utf-8")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _demo_names() -> list[str]:
    return [DEMO_CONFIG, *FILE_NAMES.values()]


def _demo_complete(folder: Path) -> bool:
    """Whether ``folder`` holds the package's demo configuration and every ntuple with the
    size and SHA-256 its manifest recorded when it was made."""
    try:
        manifest = json.loads((folder / _DEMO_MANIFEST).read_text("utf-8"))
        files = manifest["files"]
        if manifest.get("format") != _DEMO_MANIFEST_FORMAT or sorted(files) != sorted(_demo_names()):
            return False
        if (folder / DEMO_CONFIG).read_text("utf-8") != demo_config_text():
            return False
        for name, recorded in files.items():
            path = folder / name
            if path.stat().st_size != recorded["size"] or _sha256(path) != recorded["sha256"]:
                return False
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    return True


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created when missing) for the block: one process
    makes the demo folder while the others wait for it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def demo_folder(cache: str | os.PathLike | None = None,
                echo: Callable[[str], None] | None = None) -> Path:
    """The demo folder ``<cache>/demo-<hepbdt version>``: ``demo.toml`` beside
    ``signal.root``, ``background_qcd.root`` and ``background_ttbar.root``, made on first use.

    Parameters
    ----------
    cache : path, optional
        The cache folder (default: :func:`cache_dir`); created when missing.
    echo : callable, optional
        Called with one line of text when the folder has to be made.

    A folder that is there and complete (its manifest's sizes and SHA-256s match its files,
    and its configuration is the package's) is reused as it is. Otherwise, under a lock
    beside it, the configuration and the ntuples (:func:`generate`, default seed and sizes:
    the arrays of the repository's data/) are written into a temporary folder in the cache,
    which is renamed into place when every file is there; an incomplete folder is moved
    aside and removed. So a reader sees the whole folder or none.
    """
    root = Path(cache).expanduser().absolute() if cache is not None else cache_dir()
    folder = root / f"demo-{__version__}"
    if _demo_complete(folder):
        return folder
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f".{folder.name}.lock"):
        if _demo_complete(folder):  # another process made it while this one waited
            return folder
        for leftover in root.glob(f".{folder.name}.*.tmp"):  # of a run that was killed
            shutil.rmtree(leftover, ignore_errors=True)
        if echo is not None:
            echo(f"writing the demo ntuples into {folder} (once, about 5 MB)")
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=root))
        try:
            generate(staging)
            atomic_write_text(staging / DEMO_CONFIG, demo_config_text())
            files = {name: {"size": (staging / name).stat().st_size,
                            "sha256": _sha256(staging / name)} for name in _demo_names()}
            manifest = {
                "format": _DEMO_MANIFEST_FORMAT, "hepbdt": __version__, "seed": DEFAULT_SEED,
                "n_signal": DEFAULT_N_SIGNAL, "n_background": list(DEFAULT_N_BACKGROUND),
                "same_bytes_as_repository_data": all(
                    files[name]["sha256"] == sha for name, sha in SHIPPED_SHA256.items()),
                "files": files,
            }
            atomic_write_text(staging / _DEMO_MANIFEST, json.dumps(manifest, indent=1) + "\n")
            if folder.exists() or folder.is_symlink():
                stale = Path(tempfile.mkdtemp(prefix=f".{folder.name}.stale-", suffix=".tmp",
                                              dir=root))
                os.rename(folder, stale / folder.name)
                shutil.rmtree(stale, ignore_errors=True)
            os.rename(staging, folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m hepbdt.demo_data OUTDIR [--seed N] ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m hepbdt.demo_data",
        description="Write the hepbdt demo ntuples (signal, QCD, ttbar) to OUTDIR.",
    )
    parser.add_argument("output_dir", type=Path, help="directory for the .root files")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--n-signal", type=int, default=DEFAULT_N_SIGNAL)
    parser.add_argument(
        "--n-background",
        type=int,
        nargs=2,
        default=list(DEFAULT_N_BACKGROUND),
        metavar=("N_QCD", "N_TTBAR"),
    )
    args = parser.parse_args(argv)
    try:
        paths = generate(
            args.output_dir,
            seed=args.seed,
            n_signal=args.n_signal,
            n_background=args.n_background,
        )
    except ValueError as error:
        parser.error(str(error))
    for process, path in paths.items():
        print(f"{process:18s} {path}  ({path.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
