"""Writes slash_names.root with ROOT 6.40 (``.rootenv/bin/python slash_names.py OUT``):
TTree ``events`` of 60 entries whose top-level branches' names hold a ``/`` (a ratio's
name), beside a branch named as the part after it.

- ``p``: a Float_t, 10 + i;
- ``E/p``: a Float_t (leaf ``E_over_p``), 1 + i / 100;
- ``pt/m``: a Float_t (leaf ``pt_over_m``), 0.5 i; the tree has no branch ``m``;
- ``w``: a Float_t, 1.

ROOT's ``TTree::Draw("p")`` reads 10 + i, and ``TTree::Draw("m")`` is "Bad numerical
expression": neither ``E/p`` nor ``pt/m`` is a member of a split object.
"""

import array
import sys

import ROOT

out = ROOT.TFile(sys.argv[1] if len(sys.argv) > 1 else "slash_names.root", "RECREATE")
tree = ROOT.TTree("events", "branch names with a slash")
p, e_over_p, pt_over_m, w = (array.array("f", [0.0]) for _ in range(4))
tree.Branch("p", p, "p/F")
tree.Branch("E/p", e_over_p, "E_over_p/F")
tree.Branch("pt/m", pt_over_m, "pt_over_m/F")
tree.Branch("w", w, "w/F")
for i in range(60):
    p[0], e_over_p[0], pt_over_m[0], w[0] = 10 + i, 1 + i / 100, 0.5 * i, 1.0
    tree.Fill()
tree.Write()
out.Close()
