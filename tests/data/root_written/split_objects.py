"""Writes split_objects.root with ROOT 6.40 (``.rootenv/bin/python split_objects.py OUT``):
TTree ``events`` of 120 entries with split objects as ROOT and Delphes write them.

- ``Jet``: a TClonesArray of TVector3 split into member branches ``Jet.fX``, ``Jet.fY``,
  ``Jet.fZ`` (uproot's keys ``Jet/Jet.fX``, ...), with its count ``Jet_size`` (Int_t):
  entry i holds i % 4 jets, jet j with x = i + j / 4, y = -2 i, z = 100 j;
- ``a`` and ``b``: TAttLine objects split into members named without their object
  (``a/fLineColor``, ``b/fLineColor``, ...): a's colour i % 7, b's 100 + i;
- ``fLineColor``: a top-level Short_t, 1000 + i, made after ``a`` (so ROOT's
  ``TTree::Draw("fLineColor")`` reads a's member);
- ``w``: a Float_t, 0.5 + i.
"""

import array
import sys

import ROOT

out = ROOT.TFile(sys.argv[1] if len(sys.argv) > 1 else "split_objects.root", "RECREATE")
tree = ROOT.TTree("events", "split objects, as ROOT and Delphes write them")
jets = ROOT.TClonesArray("TVector3", 4)
tree.Branch("Jet", jets, 32000, 99)
size = array.array("i", [0])
tree.Branch("Jet_size", size, "Jet_size/I")
line_a, line_b = ROOT.TAttLine(), ROOT.TAttLine()
tree.Branch("a", line_a, 32000, 99)
tree.Branch("b", line_b, 32000, 99)
colour = array.array("h", [0])
tree.Branch("fLineColor", colour, "fLineColor/S")
w = array.array("f", [0.0])
tree.Branch("w", w, "w/F")
for i in range(120):
    jets.Clear()
    size[0] = i % 4
    for j in range(size[0]):
        jets.ConstructedAt(j).SetXYZ(i + j / 4, -2.0 * i, 100.0 * j)
    line_a.SetLineColor(i % 7)
    line_b.SetLineColor(100 + i)
    colour[0] = 1000 + i
    w[0] = 0.5 + i
    tree.Fill()
tree.Write()
out.Close()
