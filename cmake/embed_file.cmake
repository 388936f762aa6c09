# cmake/embed_file.cmake — turns a file into a C array (run as a script):
#   cmake -DINPUT=f -DOUTPUT=f.c -DSYMBOL=name -P embed_file.cmake
# defines  const unsigned char name[] (NUL-terminated) and
#          const unsigned long name_len (without the NUL).
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp"
  "/* generated from ${INPUT} by cmake/embed_file.cmake; do not edit */\n"
  "const unsigned char ${SYMBOL}[] = {\n${bytes}0x00};\n"
  "const unsigned long ${SYMBOL}_len = ${len};\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
