"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2048x1024xf32>) -> (tensor<2048x1024xf32>), sym_name = "model"}> ({
  ^bb0(%x: tensor<2048x1024xf32>):
    %sig = "kf.sigmoid"(%x) : (tensor<2048x1024xf32>) -> tensor<2048x1024xf32> loc("sig")
    %y = "kf.mul"(%x, %sig) : (tensor<2048x1024xf32>, tensor<2048x1024xf32>) -> tensor<2048x1024xf32> loc("y")
    "func.return"(%y) : (tensor<2048x1024xf32>) -> ()
  }) : () -> ()
}) : () -> ()
