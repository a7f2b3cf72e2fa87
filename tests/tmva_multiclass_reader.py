"""EvaluateMulticlass of the real TMVA::Reader: run by the ROOT wheel's Python.

    python tmva_multiclass_reader.py WEIGHTS.xml INPUT.csv OUTPUT.csv

INPUT.csv holds one event a row (the XML's variables in order, no header); OUTPUT.csv one
row of class probabilities an event, printed with 17 significant digits. The variables are
booked by their Expression, or by their Label (the model's feature name, as a user would)
when TMVA_BOOK_BY=Label.
"""

import array
import csv
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.environ["TMVA_READER_DIR"])
import tmva_reader  # noqa: E402

TMVA = tmva_reader.load()
xml, source, target = sys.argv[1:4]
book_by = os.environ.get("TMVA_BOOK_BY", "Expression")
names = [v.get(book_by) for v in ET.parse(xml).getroot().find("Variables")]
reader = TMVA.Reader("!Color:Silent")
values = [array.array("f", [0.0]) for _ in names]
for name, value in zip(names, values, strict=True):
    reader.AddVariable(name, value)
reader.BookMVA("BDT", xml)
with open(source) as rows, open(target, "w", newline="") as out:
    writer = csv.writer(out)
    for row in csv.reader(rows):
        for value, x in zip(values, row, strict=True):
            value[0] = float(x)
        writer.writerow([f"{p:.17g}" for p in reader.EvaluateMulticlass("BDT")])
