import os
import sys

# fake_ttnn and ttnn_scenarios sit beside the tests, whatever import mode pytest uses.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

