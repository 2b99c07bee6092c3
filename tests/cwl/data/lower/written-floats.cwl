cwlVersion: v1.2
class: CommandLineTool
doc: Floats on the command line come out as they are written here (cwltool formats them so).
baseCommand: [echo, -n]
inputs:
  small:
    type: float
    default: 0.000025
    inputBinding: {position: 1}
  exponent:
    type: float
    default: 2.5e4
    inputBinding: {position: 2}
  plain_float:
    type: float
    default: 40000.0
    inputBinding: {position: 3}
  negative:
    type: float
    default: -7.5E+3
    inputBinding: {position: 4}
outputs:
  line: stdout
stdout: line.txt
